/* kiln_test_plugin.c -- placeholder plugin (replaced in Step 2). */
#include "backend.h"
