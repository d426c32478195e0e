// The Driver table pointed at simcuda, for tests that drive the allocator
// directly. Built with __CUDA_API_VERSION_INTERNAL, as allocator/ is.
#include <dlfcn.h>

#include <memory>

#include "allocator/driver.h"

std::shared_ptr<cuswap::Driver> load_simcuda_driver() {
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!libcuda) return nullptr;
  auto driver = std::make_shared<cuswap::Driver>();
  if (driver->load(libcuda, dlsym) == 0) return nullptr;
  return driver;
}
