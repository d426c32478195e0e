// Code that may run before a sanitizer's runtime is initialised (the
// dlsym override is called by the sanitizer's own start-up) must not be
// instrumented: its shadow memory does not exist yet.
#pragma once

#define CUSWAP_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined", "thread")))
