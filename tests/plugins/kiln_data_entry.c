/*
** kiln_data_entry.c -- a shared object that exports a *data object* named
** kiln_backend_entry (tests/unit/test_plugin.c).  Called as the entry
** function it would jump into non-executable data; the loader must see
** from the symbol table that it is not a function and refuse the plugin
** with KILN_ERR_ABI.
*/
__attribute__((visibility("default"))) const unsigned char
    kiln_backend_entry[64] = {0xff, 0xff, 0xff, 0xff}; /* never code */
