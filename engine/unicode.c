/* unicode.c — UTF-8 codec and code point classes for the tokenizer. */
#include "unicode.h"

#include "unicode_data.inc"

uint16_t arb_unicode_flags(uint32_t cp) {
    if (cp > 0x10FFFF) return ARB_UC_UNDEFINED;
    /* binary search: last run whose first <= cp */
    size_t lo = 0, hi = sizeof k_cat_runs / sizeof k_cat_runs[0];
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (k_cat_runs[mid].first <= cp) lo = mid; else hi = mid;
    }
    uint16_t f = k_cat_runs[lo].flags;
    /* White_Space (PropList.txt), the set llama.cpp's \s uses. */
    if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
        (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
        cp == 0x205F || cp == 0x3000)
        f |= ARB_UC_WHITESPACE;
    return f;
}

size_t arb_utf8_len(uint8_t lead) {
    static const uint8_t k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return k_len[lead >> 4];
}

static bool is_cont(const char *s, size_t i) { return ((uint8_t)s[i] & 0xC0) == 0x80; }

uint32_t arb_utf8_decode(const char *s, size_t len, size_t *adv) {
    const uint8_t b0 = (uint8_t)s[0];
    uint32_t cp = ARB_UC_REPLACEMENT;
    size_t n = 1;
    if (b0 < 0x80) {
        cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
        if (len >= 2 && is_cont(s, 1)) {
            cp = ((uint32_t)(b0 & 0x1F) << 6) | ((uint8_t)s[1] & 0x3F);
            n = 2;
        }
    } else if ((b0 & 0xF0) == 0xE0) {
        if (len >= 3 && is_cont(s, 1) && is_cont(s, 2)) {
            cp = ((uint32_t)(b0 & 0x0F) << 12) | ((uint32_t)((uint8_t)s[1] & 0x3F) << 6) |
                 ((uint8_t)s[2] & 0x3F);
            n = 3;
        }
    } else if ((b0 & 0xF8) == 0xF0) {
        if (len >= 4 && is_cont(s, 1) && is_cont(s, 2) && is_cont(s, 3)) {
            cp = ((uint32_t)(b0 & 0x07) << 18) | ((uint32_t)((uint8_t)s[1] & 0x3F) << 12) |
                 ((uint32_t)((uint8_t)s[2] & 0x3F) << 6) | ((uint8_t)s[3] & 0x3F);
            n = 4;
            /* llama.cpp would throw on re-encoding these; treat as invalid */
            if (cp > 0x10FFFF) { cp = ARB_UC_REPLACEMENT; n = 1; }
        }
    }
    *adv = n;
    return cp;
}

int arb_utf8_encode(uint32_t cp, char out[4]) {
    if (cp > 0x10FFFF) cp = ARB_UC_REPLACEMENT;
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

bool arb_unicode_is_deepseek_letter(uint32_t cp) {
    size_t lo = 0, hi = sizeof k_deepseek_letters / sizeof k_deepseek_letters[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < k_deepseek_letters[mid][0]) hi = mid;
        else if (cp > k_deepseek_letters[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}
