/* test_error.c — the error convention: codes, messages, origin, prefixing. */
#include <criterion/criterion.h>
#include <string.h>

#include "error.h"

Test(error, set_records_code_message_and_origin)
{
    arb_err err = {0};
    int rc = ARB_ERR(&err, ARB_E_FORMAT, "%s: bad magic 0x%08x", "x.gguf", 0x1234u);
    cr_assert_eq(rc, ARB_E_FORMAT);
    cr_assert_eq(err.code, ARB_E_FORMAT);
    cr_assert_str_eq(err.msg, "x.gguf: bad magic 0x00001234");
    cr_assert(strstr(err.file, "test_error.c") != NULL);
    cr_assert_gt(err.line, 0);
}

Test(error, null_err_is_allowed)
{
    cr_assert_eq(ARB_ERR(NULL, ARB_E_IO, "ignored"), ARB_E_IO);
}

Test(error, prefix_prepends_context)
{
    arb_err err = {0};
    ARB_ERR(&err, ARB_E_INVAL, "expected integer > 0");
    arb_err_prefix(&err, "methods[%d].budget", 2);
    cr_assert_str_eq(err.msg, "methods[2].budget: expected integer > 0");
}

Test(error, every_code_has_distinct_text)
{
    const int codes[] = {ARB_OK, ARB_E_NOMEM, ARB_E_IO, ARB_E_FORMAT, ARB_E_INVAL, ARB_E_UNSUPPORTED,
                         ARB_E_NOTFOUND, ARB_E_RANGE, ARB_E_DB, ARB_E_EXTERNAL, ARB_E_INTERRUPTED,
                         ARB_E_NODEVICE};
    size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            cr_assert_str_neq(arb_strerror(codes[i]), arb_strerror(codes[j]));
    cr_assert_str_eq(arb_strerror(12345), "unknown error");
}
