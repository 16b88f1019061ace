/*
** alloc.c -- the one allocator of libkiln (kiln__malloc and friends,
** internal.h) with per-thread fault injection.
**
** Every heap allocation of the library goes through these functions, so a
** test can make the Nth one fail (kiln__fault_after) and check that the
** call it made failed cleanly with KILN_ERR_NO_MEMORY and leaked nothing.
** The fault state is thread-local: a test arms it, calls one API function,
** and no other thread is affected.  Once the countdown reaches zero every
** allocation fails until the test disarms it, so a retry cannot succeed.
*/
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct fault_state {
    long countdown;   /* allocations left before they fail; < 0: off */
    long alloc_count; /* allocations since the last kiln__fault_after */
} fault_state;

static _Thread_local fault_state tls_fault = {-1, 0};

static int fault_fire(void)
{
    tls_fault.alloc_count++;
    if (tls_fault.countdown < 0)
        return 0;
    if (tls_fault.countdown == 0)
        return 1; /* keep failing until disarmed: a retry must not succeed */
    tls_fault.countdown--;
    return 0;
}

long kiln__fault_after(long n)
{
    long made = tls_fault.alloc_count;
    tls_fault.alloc_count = 0;
    tls_fault.countdown = n;
    return made;
}

void *kiln__malloc(size_t n)
{
    if (fault_fire())
        return NULL;
    return malloc(n ? n : 1);
}

void *kiln__calloc(size_t count, size_t size)
{
    if (fault_fire())
        return NULL;
    if (count == 0 || size == 0)
        count = size = 1;
    return calloc(count, size);
}

void *kiln__realloc(void *p, size_t n)
{
    if (fault_fire())
        return NULL;
    return realloc(p, n ? n : 1);
}

char *kiln__strndup(const char *s, size_t n)
{
    char *d = kiln__malloc(n + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *kiln__strdup(const char *s) { return kiln__strndup(s, strlen(s)); }

void kiln__free(void *p) { free(p); }

void kiln_free(void *p) { kiln__free(p); }
