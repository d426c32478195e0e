// Run by malloc_test with and without a library preloaded: prints, for
// every malloc-family name and every name of jemalloc's API, the object that
// defines what the process's lookup finds ("none" if nothing does). With
// libcuswap.so or malloc_probe preloaded the listing must not change.
//
// When malloc_probe is loaded (preloaded, or with --dlopen PATH), memory also
// crosses the boundary both ways (malloc here, free there and back; operator
// new and delete too): with a second malloc inside the library, the process's
// free would abort on the library's pointers. Then the probe's stash is used,
// and the threads jemalloc started are counted: none, whatever MALLOC_CONF says.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <new>
#include <string>
#include <system_error>

namespace {

const char* const kMallocNames[] = {"malloc",
                                    "free",
                                    "calloc",
                                    "realloc",
                                    "posix_memalign",
                                    "aligned_alloc",
                                    "memalign",
                                    "valloc",
                                    "pvalloc",
                                    "malloc_usable_size",
                                    "_Znwm",
                                    "_Znam",
                                    "_ZdlPv",
                                    "_ZdaPv",
                                    "_ZnwmRKSt9nothrow_t",
                                    "_ZdlPvm",
                                    "_ZnwmSt11align_val_t",
                                    "_ZdlPvSt11align_val_t"};
const char* const kJemallocNames[] = {"mallocx",
                                      "dallocx",
                                      "sdallocx",
                                      "rallocx",
                                      "xallocx",
                                      "sallocx",
                                      "nallocx",
                                      "mallctl",
                                      "mallctlbymib",
                                      "mallctlnametomib",
                                      "malloc_conf",
                                      "malloc_message",
                                      "malloc_stats_print",
                                      "je_malloc",
                                      "je_mallocx"};

void print_owner(const char* name) {
  void* at = dlsym(RTLD_DEFAULT, name);
  Dl_info info{};
  if (!at) {
    std::printf("%s none\n", name);
  } else if (dladdr(at, &info) && info.dli_fname) {
    // One file reached by two paths (a preloaded symlink, /lib and /usr/lib)
    // is one object.
    std::error_code error;
    std::filesystem::path file = std::filesystem::canonical(info.dli_fname, error);
    std::printf("%s %s\n", name, error ? info.dli_fname : file.c_str());
  } else {
    std::printf("%s unknown\n", name);
  }
}

// Threads jemalloc started for purging (it names them so).
int background_threads() {
  int count = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    count += name.rfind("jemalloc_bg", 0) == 0;
  }
  return count;
}

template <typename Fn>
Fn probe_function(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

int cross_the_boundary(void* handle) {
  auto probe_malloc = probe_function<void* (*)(size_t)>(handle, "malloc_probe_malloc");
  auto probe_free = probe_function<void (*)(void*)>(handle, "malloc_probe_free");
  auto probe_new = probe_function<void* (*)(size_t)>(handle, "malloc_probe_new");
  auto probe_delete = probe_function<void (*)(void*)>(handle, "malloc_probe_delete");
  auto probe_stash = probe_function<int (*)()>(handle, "malloc_probe_stash");
  if (!probe_malloc || !probe_free || !probe_new || !probe_delete || !probe_stash) {
    std::printf("probe incomplete\n");
    return 1;
  }
  // Sizes served from glibc's heap (below its mmap threshold) and above it.
  for (size_t bytes : {size_t{24}, size_t{4000}, size_t{100000}, size_t{1} << 20}) {
    void* p = probe_malloc(bytes);
    std::memset(p, 1, bytes);
    std::free(p);
    void* q = std::malloc(bytes);
    std::memset(q, 2, bytes);
    probe_free(q);
    void* r = probe_new(bytes);
    std::memset(r, 3, bytes);
    ::operator delete(r);
    void* s = ::operator new(bytes);
    probe_delete(s);
  }
  std::printf("crossed malloc, free, new and delete both ways\n");
  int stash = probe_stash();
  std::printf("stash %s (%d)\n", stash == 0 ? "ok" : "failed", stash);
  std::printf("jemalloc background threads %d\n", background_threads());
  return stash == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  void* handle = RTLD_DEFAULT;
  if (argc == 3 && std::strcmp(argv[1], "--dlopen") == 0) {
    handle = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      std::printf("dlopen failed: %s\n", dlerror());
      return 2;
    }
  }
  for (const char* name : kMallocNames)
    print_owner(name);
  for (const char* name : kJemallocNames)
    print_owner(name);
  if (dlsym(handle, "malloc_probe_stash")) return cross_the_boundary(handle);
  return 0;
}
