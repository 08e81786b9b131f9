/* config_int.h — internals shared by the two files of the config module
 * (config.c: top level, models, datasets, sampling; config_method.c: methods and sweeps). */
#ifndef ARB_CONFIG_INT_H
#define ARB_CONFIG_INT_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "config.h"

/* JSON type of v for messages: "boolean", "number", "string", "array", "object", "null". */
const char *arb_config_json_type(const cJSON *v);
/* v is a number with an integral value exactly representable as a double. */
bool arb_config_json_is_int(const cJSON *v);
/* Parse the "methods" array of root into c (config_method.c). */
int arb_config_methods_parse(arb_config *c, const cJSON *root, arb_err *err);

#endif
