// Loading cuswap must not replace the process's malloc (Note [A private
// jemalloc] in allocator/jemalloc.cmake). Checked two ways:
//   - at run time: malloc_check lists which object defines every
//     malloc-family and jemalloc name as the process finds it, without a
//     preload, with libcuswap.so preloaded and with malloc_probe (a library
//     that certainly holds the stash) preloaded; the listings must agree,
//     and memory must cross the probe's boundary both ways;
//   - in the binaries: neither library defines any of those names, in its
//     dynamic or its full symbol table, while both hold the private
//     jemalloc (je_cuswap_mallocx) and import malloc and free.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace {

using cuswap::testing::ProgramResult;
using cuswap::testing::run_program;
using Env = std::map<std::string, std::string>;

const char* const kForbiddenDefinitions[] = {"malloc",
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
                                             "_ZdlPvm",
                                             "mallocx",
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
                                             "malloc_stats_print"};

Env environment(const std::string& preload) {
  Env env = {{"LD_PRELOAD", ""},
             {"CUSWAP_CONF", ""},
             {"SIMCUDA_CONF", ""},
             {"MALLOC_CONF", ""},
             {"LD_LIBRARY_PATH", SIMCUDA_DIR}};
  if (!preload.empty())
    env["LD_PRELOAD"] = std::string(SANITIZER_RUNTIME).empty()
                            ? preload
                            : std::string(SANITIZER_RUNTIME) + ":" + preload;
  return env;
}

// The first `lines` lines of `text`.
std::string head(const std::string& text, size_t lines) {
  size_t at = 0;
  for (size_t i = 0; i < lines && at != std::string::npos; ++i) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  return text.substr(0, at);
}

size_t line_count(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The named symbols of an ELF64 shared object, from .dynsym or .symtab.
struct Symbols {
  std::set<std::string> defined, undefined;
};

bool read_symbols(const std::string& path, uint32_t table_type, Symbols& out, std::string& error) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  std::vector<char> image(file ? static_cast<size_t>(file.tellg()) : 0);
  file.seekg(0);
  file.read(image.data(), static_cast<std::streamsize>(image.size()));
  if (image.size() < sizeof(Elf64_Ehdr)) {
    error = path + ": not an ELF file";
    return false;
  }
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_shentsize != sizeof(Elf64_Shdr) ||
      header.e_shoff + uint64_t{header.e_shnum} * sizeof(Elf64_Shdr) > image.size()) {
    error = path + ": not an ELF64 file with section headers";
    return false;
  }
  auto section = [&](size_t index) {
    Elf64_Shdr s;
    std::memcpy(&s, image.data() + header.e_shoff + index * sizeof(Elf64_Shdr), sizeof s);
    return s;
  };
  bool found = false;
  for (size_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr table = section(i);
    if (table.sh_type != table_type) continue;
    found = true;
    if (table.sh_link >= header.e_shnum || table.sh_entsize != sizeof(Elf64_Sym)) {
      error = path + ": malformed symbol table";
      return false;
    }
    Elf64_Shdr strings = section(table.sh_link);
    if (table.sh_offset + table.sh_size > image.size() ||
        strings.sh_offset + strings.sh_size > image.size()) {
      error = path + ": symbol table past the end of the file";
      return false;
    }
    for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= table.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol;
      std::memcpy(&symbol, image.data() + table.sh_offset + at, sizeof symbol);
      if (symbol.st_name == 0 || symbol.st_name >= strings.sh_size) continue;
      const char* name = image.data() + strings.sh_offset + symbol.st_name;
      std::string text(name, strnlen(name, strings.sh_size - symbol.st_name));
      // A versioned reference in .symtab reads "malloc@GLIBC_2.2.5".
      text = text.substr(0, text.find('@'));
      (symbol.st_shndx == SHN_UNDEF ? out.undefined : out.defined).insert(text);
    }
  }
  if (!found) error = path + ": has no such symbol table (stripped?)";
  return found;
}

void expect_private_jemalloc_only(const std::string& path) {
  Symbols dynamic, full;
  std::string error;
  ASSERT_TRUE(read_symbols(path, SHT_DYNSYM, dynamic, error)) << error;
  ASSERT_TRUE(read_symbols(path, SHT_SYMTAB, full, error)) << error;
  for (const char* name : kForbiddenDefinitions) {
    EXPECT_EQ(dynamic.defined.count(name), 0u) << path << " exports " << name;
    EXPECT_EQ(full.defined.count(name), 0u) << path << " defines " << name << " internally";
  }
  // The arena code is really there, under its private names only...
  EXPECT_EQ(full.defined.count("je_cuswap_mallocx"), 1u) << path << " lacks the private jemalloc";
  EXPECT_EQ(full.defined.count("je_cuswap_mallctl"), 1u) << path;
  for (const std::string& name : dynamic.defined)
    EXPECT_NE(name.rfind("je_cuswap_", 0), 0u) << path << " exports " << name;
  // ...and the library's own allocations are imports, bound to the process's.
  EXPECT_EQ(dynamic.undefined.count("malloc"), 1u) << path << " does not import malloc";
  EXPECT_EQ(dynamic.undefined.count("free"), 1u) << path << " does not import free";
}

TEST(MallocNotReplaced, ShimKeepsTheProcessMalloc) {
  ProgramResult base = run_program({MALLOC_CHECK}, environment(""));
  ASSERT_EQ(base.exit_code, 0) << base.out << base.err;
  ProgramResult shim = run_program({MALLOC_CHECK}, environment(CUSWAP_SHIM));
  ASSERT_EQ(shim.exit_code, 0) << shim.out << shim.err;
  EXPECT_EQ(shim.out, base.out);
  EXPECT_EQ(base.out.find("libcuswap"), std::string::npos) << base.out;
  EXPECT_NE(base.out.find("\nmallocx none\n"), std::string::npos) << base.out;
  EXPECT_NE(base.out.find("\nmallctl none\n"), std::string::npos) << base.out;
}

TEST(MallocNotReplaced, StashLibraryKeepsTheProcessMalloc) {
  ProgramResult base = run_program({MALLOC_CHECK}, environment(""));
  ASSERT_EQ(base.exit_code, 0) << base.out << base.err;
  ProgramResult probe = run_program({MALLOC_CHECK}, environment(MALLOC_PROBE));
  EXPECT_EQ(probe.exit_code, 0) << probe.out << probe.err;
  // The same owners, then the crossings and the stash.
  EXPECT_EQ(head(probe.out, line_count(base.out)), base.out);
  EXPECT_NE(probe.out.find("crossed malloc, free, new and delete both ways\n"), std::string::npos)
      << probe.out << probe.err;
  EXPECT_NE(probe.out.find("stash ok"), std::string::npos) << probe.out << probe.err;
  EXPECT_NE(probe.out.find("jemalloc background threads 0\n"), std::string::npos) << probe.out;
}

// MALLOC_CONF belongs to the process's own allocator: the private copy
// neither prints statistics at exit nor starts background threads for it.
TEST(MallocNotReplaced, ProcessMallocConfIsNotTheStashs) {
  Env env = environment(MALLOC_PROBE);
  env["MALLOC_CONF"] = "background_thread:true,stats_print:true";
  ProgramResult probe = run_program({MALLOC_CHECK}, env);
  EXPECT_EQ(probe.exit_code, 0) << probe.out << probe.err;
  EXPECT_NE(probe.out.find("stash ok"), std::string::npos) << probe.out << probe.err;
  EXPECT_NE(probe.out.find("jemalloc background threads 0\n"), std::string::npos) << probe.out;
  EXPECT_EQ(probe.err.find("jemalloc statistics"), std::string::npos) << probe.err;
}

// The private jemalloc's TLS is initial-exec (Note [A private jemalloc]): a
// library holding it loads with dlopen once the process has static TLS to
// spare for it.
TEST(MallocNotReplaced, StashLibraryLoadsWithDlopenGivenStaticTls) {
  Env env = environment("");
  env["GLIBC_TUNABLES"] = "glibc.rtld.optional_static_tls=16384";
  ProgramResult opened = run_program({MALLOC_CHECK, "--dlopen", MALLOC_PROBE}, env);
  EXPECT_EQ(opened.exit_code, 0) << opened.out << opened.err;
  EXPECT_NE(opened.out.find("stash ok"), std::string::npos) << opened.out << opened.err;
}

TEST(MallocNotReplaced, LibrariesDefineNoMallocName) {
  expect_private_jemalloc_only(MALLOC_PROBE);
  expect_private_jemalloc_only(CUSWAP_SHIM);
}

}  // namespace
