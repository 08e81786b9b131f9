/* test_chat.c — chat templates: exact strings for each family, single and
 * multi-turn, with and without a system message, detection, truncation, errors.
 * The expected strings were checked against jinja2 renderings (trim_blocks,
 * lstrip_blocks, as transformers does) of the SmolLM2, Qwen2.5, Llama-3 and
 * Llama-3.1 templates; Vicuna follows FastChat's vicuna_v1.1 get_prompt; Gemma's were
 * rendered by jinja2 from Gemma-3's template (bos_token empty: arbor leaves BOS to the
 * tokenizer). */
#include <criterion/criterion.h>
#include <string.h>

#include "chat.h"

/* Template sources: only the parts arbor reads (markers, the default system literal). */
static const char k_smollm_src[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
static const char k_qwen_src[] = /* escaped newlines, a non-constant system literal first */
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
    "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a "
    "helpful assistant.<|im_end|>\\n' }}{%- endif %}";
static const char k_qwen3_src[] = "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}";
static const char k_llama3_src[] = "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>' %}";
static const char k_llama31_src[] = "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}"
                                    "{{- \"Cutting Knowledge Date: December 2023\\n\" }}";

static const arb_chat_msg k_one[] = {{"user", "Hi"}};
static const arb_chat_msg k_sys[] = {{"system", "Be terse."}, {"user", "Hi"}};
static const arb_chat_msg k_multi[] = {{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Why?"}};
static const arb_chat_msg k_multi_sys[] = {
    {"system", " Be terse.\n"}, {"user", "  Q1\n"}, {"assistant", "A1 "}, {"user", "Q2"}};

static void check(const char *name, const char *src, const arb_chat_msg *m, int n, bool add, const char *want) {
    char buf[2048];
    size_t n_out = 0;
    arb_err err = {0};
    int rc = arb_chat_apply_src(name, src, src ? strlen(src) : 0, m, n, add, buf, sizeof buf, &n_out, &err);
    cr_assert_eq(rc, ARB_OK, "%s", err.msg);
    cr_assert_str_eq(buf, want);
    cr_assert_eq(n_out, strlen(want));
}

#define SMOL_SYS "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"

Test(chat, chatml_smollm) {
    check(NULL, k_smollm_src, k_one, 1, true, SMOL_SYS "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    check(NULL, k_smollm_src, k_one, 1, false, SMOL_SYS "<|im_start|>user\nHi<|im_end|>\n");
    check(NULL, k_smollm_src, k_sys, 2, true,
          "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    check(NULL, k_smollm_src, k_multi, 3, true,
          SMOL_SYS "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
                   "<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n");
    /* ChatML does not trim */
    check(NULL, k_smollm_src, k_multi_sys, 4, false,
          "<|im_start|>system\n Be terse.\n<|im_end|>\n<|im_start|>user\n  Q1\n<|im_end|>\n"
          "<|im_start|>assistant\nA1 <|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n");
    /* the name override keeps the template's default system message */
    check("chatml", k_smollm_src, k_one, 1, true, SMOL_SYS "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

Test(chat, chatml_qwen) {
    check(NULL, k_qwen_src, k_multi, 3, true,
          "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
          "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
          "<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n");
    check("qwen", k_qwen_src, k_sys, 2, true,
          "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    /* no constant system literal (Qwen3) and no template at all: no default system */
    check(NULL, k_qwen3_src, k_one, 1, true, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    check("chatml", NULL, k_one, 1, false, "<|im_start|>user\nHi<|im_end|>\n");
}

#define L3(role, text) "<|start_header_id|>" role "<|end_header_id|>\n\n" text "<|eot_id|>"
#define L3_ASS "<|start_header_id|>assistant<|end_header_id|>\n\n"

Test(chat, llama3) {
    check(NULL, k_llama3_src, k_one, 1, true, L3("user", "Hi") L3_ASS);
    check(NULL, k_llama3_src, k_sys, 2, false, L3("system", "Be terse.") L3("user", "Hi"));
    check(NULL, k_llama3_src, k_multi, 3, true, L3("user", "Hi") L3("assistant", "Hello!") L3("user", "Why?") L3_ASS);
    check("llama3", NULL, k_multi_sys, 4, true, /* contents are trimmed */
          L3("system", "Be terse.") L3("user", "Q1") L3("assistant", "A1") L3("user", "Q2") L3_ASS);
}

#define L31_SYS(text) L3("system", "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" text)

Test(chat, llama31) {
    check(NULL, k_llama31_src, k_one, 1, true, L31_SYS("") L3("user", "Hi") L3_ASS);
    check(NULL, k_llama31_src, k_sys, 2, true, L31_SYS("Be terse.") L3("user", "Hi") L3_ASS);
    check("llama3.1", NULL, k_multi_sys, 4, false,
          L31_SYS("Be terse.") L3("user", "Q1") L3("assistant", "A1") L3("user", "Q2"));
}

#define VIC_SYS                                                                                                        \
    "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "          \
    "detailed, and polite answers to the user's questions."

Test(chat, vicuna) {
    check("vicuna", NULL, k_one, 1, true, VIC_SYS " USER: Hi ASSISTANT:");
    check("vicuna_v1.1", NULL, k_multi, 3, true, VIC_SYS " USER: Hi ASSISTANT: Hello!</s>USER: Why? ASSISTANT:");
    check("vicuna", NULL, k_sys, 2, false, "Be terse. USER: Hi ");
    check(NULL, "{{ 'USER: ' + m }}{{ 'ASSISTANT:' }}", k_one, 1, true, VIC_SYS " USER: Hi ASSISTANT:");
}

Test(chat, gemma) {
    check("gemma", NULL, k_one, 1, true, "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
    check("gemma3", NULL, k_multi_sys, 4, true,
          "<start_of_turn>user\n Be terse.\n\n\nQ1<end_of_turn>\n<start_of_turn>model\nA1<end_of_turn>\n"
          "<start_of_turn>user\nQ2<end_of_turn>\n<start_of_turn>model\n");
    check(NULL, "{{ '<start_of_turn>' + role + '\\n' }}", k_multi, 3, false,
          "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
          "<start_of_turn>user\nWhy?<end_of_turn>\n");
    char buf[256];
    size_t n = 0;
    arb_err err = {0};
    const arb_chat_msg two_users[] = {{"user", "a"}, {"user", "b"}};
    cr_assert_eq(arb_chat_apply_src("gemma", NULL, 0, two_users, 2, true, buf, sizeof buf, &n, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "message 1") && strstr(err.msg, "alternating"), "%s", err.msg);
    const arb_chat_msg model_first[] = {{"assistant", "a"}};
    cr_assert_eq(arb_chat_apply_src("gemma", NULL, 0, model_first, 1, true, buf, sizeof buf, &n, &err), ARB_E_INVAL);
    cr_assert_eq(arb_chat_kind_from_name("gemma3"), ARB_CHAT_GEMMA);
    cr_assert_str_eq(arb_chat_kind_name(ARB_CHAT_GEMMA), "gemma");
}

Test(chat, detect_and_names) {
    cr_assert_eq(arb_chat_detect(k_smollm_src, strlen(k_smollm_src)), ARB_CHAT_CHATML);
    cr_assert_eq(arb_chat_detect(k_llama3_src, strlen(k_llama3_src)), ARB_CHAT_LLAMA3);
    cr_assert_eq(arb_chat_detect(k_llama31_src, strlen(k_llama31_src)), ARB_CHAT_LLAMA31);
    cr_assert_eq(arb_chat_detect("{{ messages }}", 14), ARB_CHAT_UNKNOWN);
    cr_assert_eq(arb_chat_detect(NULL, 0), ARB_CHAT_UNKNOWN);
    cr_assert_eq(arb_chat_kind_from_name("smollm"), ARB_CHAT_CHATML);
    cr_assert_eq(arb_chat_kind_from_name("llama-3"), ARB_CHAT_LLAMA3);
    cr_assert_eq(arb_chat_kind_from_name("nope"), ARB_CHAT_UNKNOWN);
    cr_assert_str_eq(arb_chat_kind_name(ARB_CHAT_LLAMA31), "llama3.1");
    cr_assert_str_eq(arb_chat_kind_name(ARB_CHAT_UNKNOWN), "unknown");
}

Test(chat, truncation_and_errors) {
    char buf[8];
    size_t n = 0;
    arb_err err = {0};
    cr_assert_eq(arb_chat_apply_src("chatml", NULL, 0, k_one, 1, true, buf, sizeof buf, &n, &err), ARB_OK);
    cr_assert_eq(n, strlen("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"), "full length needed");
    cr_assert_str_eq(buf, "<|im_st", "truncated and NUL-terminated");
    cr_assert_eq(arb_chat_apply_src("chatml", NULL, 0, k_one, 1, true, NULL, 0, &n, &err), ARB_OK, "sizing call");
    cr_assert_eq(n, 52);
    cr_assert_eq(arb_chat_apply_src("nope", NULL, 0, k_one, 1, true, buf, sizeof buf, &n, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "nope"), "%s", err.msg);
    cr_assert_eq(arb_chat_apply_src(NULL, NULL, 0, k_one, 1, true, buf, sizeof buf, &n, &err), ARB_E_UNSUPPORTED);
    cr_assert(strstr(err.msg, "tokenizer.chat_template"), "%s", err.msg);
    cr_assert_eq(arb_chat_apply_src(NULL, "{{ x }}", 7, k_one, 1, true, buf, sizeof buf, &n, &err), ARB_E_UNSUPPORTED);
    const arb_chat_msg bad[] = {{"user", NULL}};
    cr_assert_eq(arb_chat_apply_src("chatml", NULL, 0, bad, 1, true, buf, sizeof buf, &n, &err), ARB_E_INVAL);
    const arb_chat_msg tool[] = {{"user", "q"}, {"tool", "r"}};
    cr_assert_eq(arb_chat_apply_src("vicuna", NULL, 0, tool, 2, true, buf, sizeof buf, &n, &err), ARB_E_INVAL);
    cr_assert(strstr(err.msg, "tool"), "%s", err.msg);
    cr_assert_eq(arb_chat_apply_tmpl(NULL, NULL, k_one, 1, true, buf, sizeof buf, &n, &err), ARB_E_UNSUPPORTED);
}
