// The dlsym override (Note [Overriding dlsym] in proc_address.cpp): RTLD_NEXT
// jumps straight to the real dlsym with the caller's return address; any
// other handle goes to cuswap_dlsym_other.
//
// The real dlsym may be wanted before any constructor of the shim has run:
// sanitizer runtimes preloaded ahead of the shim look their interceptors up
// with dlsym(RTLD_NEXT, ...) while the process starts, and their calls bind
// to this override. So the override resolves the real dlsym itself when it
// is not known yet (cuswap_resolve_real_dlsym, through dlvsym, which the
// shim does not override), keeping the caller's arguments and return
// address, and then jumps.
//
// RTLD_NEXT is ((void*)-1) on glibc, which the assembly compares with.
// That early, a sanitizer's runtime is not initialised yet either, so the
// code on this path is not instrumented (CUSWAP_UNINSTRUMENTED).
#include <dlfcn.h>

#include "hooks/uninstrumented.h"

extern "C" {
void* (*cuswap_real_dlsym)(void*, const char*) = nullptr;

namespace {
// glibc 2.34 moved dlsym into libc; older x86-64 and aarch64 libcs name it so.
constexpr const char* kDlsymVersions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
}  // namespace

CUSWAP_UNINSTRUMENTED __attribute__((visibility("hidden"))) void* cuswap_resolve_real_dlsym() {
  if (cuswap_real_dlsym) return reinterpret_cast<void*>(cuswap_real_dlsym);
  for (const char* version : kDlsymVersions) {
    if (void* fn = dlvsym(RTLD_NEXT, "dlsym", version)) {
      cuswap_real_dlsym = reinterpret_cast<void* (*)(void*, const char*)>(fn);
      return fn;
    }
  }
  return nullptr;
}
}

namespace {
__attribute__((constructor(101))) void resolve_at_load() {
  cuswap_resolve_real_dlsym();
}
}  // namespace

#if defined(__x86_64__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  cmpq $-1, %rdi
  jne 2f
  movq cuswap_real_dlsym(%rip), %rax
  testq %rax, %rax
  jne 1f
  pushq %rdi
  pushq %rsi
  subq $8, %rsp
  call cuswap_resolve_real_dlsym
  addq $8, %rsp
  popq %rsi
  popq %rdi
  testq %rax, %rax
  je 2f
1:
  jmp *%rax
2:
  jmp cuswap_dlsym_other
  .size dlsym, .-dlsym
)");
#elif defined(__aarch64__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, %function
  .p2align 4
dlsym:
  cmn x0, #1
  b.ne 2f
  adrp x16, cuswap_real_dlsym
  ldr x16, [x16, :lo12:cuswap_real_dlsym]
  cbnz x16, 1f
  stp x29, x30, [sp, #-32]!
  stp x0, x1, [sp, #16]
  bl cuswap_resolve_real_dlsym
  mov x16, x0
  ldp x0, x1, [sp, #16]
  ldp x29, x30, [sp], #32
  cbz x16, 2f
1:
  br x16
2:
  b cuswap_dlsym_other
  .size dlsym, .-dlsym
)");
#else
#error "the dlsym override needs a tail jump written for this architecture"
#endif
