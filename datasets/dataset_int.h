/* dataset_int.h — internal to the dataset module (dataset.c + catalog.c): the catalog table. */
#ifndef ARB_DATASET_INT_H
#define ARB_DATASET_INT_H

#include <stddef.h>

#include "dataset.h"

extern const arb_dataset_info arb_dataset_catalog[]; /* [arb_dataset_catalog_n], fixed order */
extern const size_t arb_dataset_catalog_n;

#endif
