# A private jemalloc for the pinned host stash (allocator/host_stash.cpp).
#
# Note [A private jemalloc]
# The stash's arena lives inside libcuswap.so, which is preloaded into
# processes that bring their own malloc. Debian's libjemalloc_pic.a defines
# malloc, free, operator new and the rest unprefixed: linked as is, the shim's
# own calls to malloc would bind to it inside the shim (the version script
# makes every one of its symbols local, and local symbols bind first), and
# exported, it would replace the process's malloc. So the build derives a copy
# of the archive in which
#   - every global symbol jemalloc defines, X, is renamed je_cuswap_X, in the
#     definitions and in jemalloc's own references to them. References to
#     what jemalloc does not define (libc, libgcc) keep their names. The
#     prefix must not begin with "cu": the shim exports cu* (exports.map), and
#     jemalloc's API has default visibility;
#   - jemalloc_cpp.o (operator new and delete) is left out: nothing uses it;
#   - jemalloc's two ways of reading a configuration, secure_getenv
#     ("MALLOC_CONF") and readlink ("/etc/malloc.conf"), are pointed at
#     je_cuswap_secure_getenv and je_cuswap_readlink, which host_stash.cpp
#     defines to find nothing: that configuration belongs to the process's
#     own jemalloc, if it has one. The private copy takes its options from
#     je_cuswap_malloc_conf alone (also in host_stash.cpp);
#   - jemalloc's load-time constructor (.init_array of jemalloc.o) is
#     removed, so that a process loading the shim pays nothing until a stash
#     is created: the first mallctl initialises the copy. The constructor
#     exists to make a fork during another thread's initialisation safe for
#     the child's later allocations; a forked child cannot use the CUDA
#     driver, so it never uses the stash.
# Whatever links it is given --exclude-libs for it and for the stash, so a
# shared library holding them exports none of their symbols even without a
# version script. The derived archive is checked to define nothing under
# another name
# (`check` below, also run as a test). Its TLS is initial-exec, as Debian
# built it (2.6 KiB in tsd.o): fine for a preloaded library, whose static TLS
# is sized when the process starts, but a plain dlopen of a library holding
# it fails with "cannot allocate memory in static TLS block" unless the
# process raised glibc.rtld.optional_static_tls (GLIBC_TUNABLES).
#
# Included from allocator/CMakeLists.txt: defines the imported static library
# cuswap_jemalloc_private (with a generated header
# cuswap_jemalloc/jemalloc_private.h declaring jemalloc's API under the
# private names) and cuswap_host_stash. Run as a script (cmake -P) with
# CUSWAP_JEMALLOC_STEP=derive or =check, it does the work described above.

set(private_je_prefix je_cuswap_)

# Every global symbol defined in the objects `objects`, into `out_var`.
function(private_je_defined_symbols out_var)
  execute_process(COMMAND ${NM} --defined-only -g --format=posix ${ARGN}
                  OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${ARGN}: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${listing}")
  set(names "")
  foreach(line IN LISTS lines)
    # posix format: "name type value size"; archive member headers end in ':'.
    if(line MATCHES "^([^ ]+) [A-Za-z] ")
      list(APPEND names ${CMAKE_MATCH_1})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  cmake_policy(VERSION 3.25)
  if(CUSWAP_JEMALLOC_STEP STREQUAL "check")
    # Every symbol the archive defines carries the prefix.
    private_je_defined_symbols(names ${ARCHIVE})
    list(LENGTH names count)
    if(count EQUAL 0)
      message(FATAL_ERROR "${ARCHIVE}: defines no symbols")
    endif()
    set(strays "")
    foreach(name IN LISTS names)
      if(NOT name MATCHES "^${private_je_prefix}")
        list(APPEND strays ${name})
      endif()
    endforeach()
    if(strays)
      message(FATAL_ERROR "${ARCHIVE}: defines symbols without the ${private_je_prefix} prefix: ${strays}")
    endif()
    foreach(required mallocx dallocx sallocx mallctl malloc_conf)
      if(NOT "${private_je_prefix}${required}" IN_LIST names)
        message(FATAL_ERROR "${ARCHIVE}: lacks ${private_je_prefix}${required}")
      endif()
    endforeach()
    message(STATUS "${ARCHIVE}: ${count} symbols, all prefixed ${private_je_prefix}")
    return()
  endif()

  if(NOT CUSWAP_JEMALLOC_STEP STREQUAL "derive")
    message(FATAL_ERROR "jemalloc.cmake: CUSWAP_JEMALLOC_STEP must be derive or check")
  endif()
  # derive: INPUT (Debian's archive) -> OUTPUT (the private copy).
  get_filename_component(work "${OUTPUT}.d" ABSOLUTE)
  file(REMOVE_RECURSE ${work})
  file(MAKE_DIRECTORY ${work})
  execute_process(COMMAND ${AR} t ${INPUT} OUTPUT_VARIABLE members RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot list ${INPUT}")
  endif()
  string(STRIP "${members}" members)
  string(REPLACE "\n" ";" members "${members}")
  list(FILTER members EXCLUDE REGEX "^jemalloc_cpp")
  execute_process(COMMAND ${AR} x ${INPUT} WORKING_DIRECTORY ${work} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot extract ${INPUT}")
  endif()
  set(objects "")
  foreach(member IN LISTS members)
    list(APPEND objects ${work}/${member})
  endforeach()

  private_je_defined_symbols(names ${objects})
  set(renames "")
  foreach(name IN LISTS names)
    string(APPEND renames "${name} ${private_je_prefix}${name}\n")
  endforeach()
  foreach(config_source secure_getenv readlink)
    if(config_source IN_LIST names)
      message(FATAL_ERROR "${INPUT} defines ${config_source}: cannot redirect it")
    endif()
    string(APPEND renames "${config_source} ${private_je_prefix}${config_source}\n")
  endforeach()
  file(WRITE ${work}/renames.txt "${renames}")

  foreach(object IN LISTS objects)
    set(extra "")
    get_filename_component(member ${object} NAME)
    if(member MATCHES "^jemalloc\\.")
      set(extra --remove-section=.init_array --remove-section=.rela.init_array)
    endif()
    execute_process(COMMAND ${OBJCOPY} --redefine-syms=${work}/renames.txt ${extra} ${object}
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "objcopy failed on ${object}: ${err}")
    endif()
  endforeach()
  file(REMOVE ${OUTPUT})
  execute_process(COMMAND ${AR} rcs ${OUTPUT} ${members} WORKING_DIRECTORY ${work}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot write ${OUTPUT}: ${err}")
  endif()
  file(REMOVE_RECURSE ${work})
  set(ARCHIVE ${OUTPUT})
  set(CUSWAP_JEMALLOC_STEP check)
  include(${CMAKE_CURRENT_LIST_FILE})
  return()
endif()

# ---- configure time ----------------------------------------------------------

find_library(CUSWAP_JEMALLOC_PIC_ARCHIVE NAMES libjemalloc_pic.a
             DOC "jemalloc built as position-independent code, unprefixed (Debian: libjemalloc-dev)")
find_path(CUSWAP_JEMALLOC_INCLUDE_DIR jemalloc/jemalloc.h)
if(NOT CUSWAP_JEMALLOC_PIC_ARCHIVE OR NOT CUSWAP_JEMALLOC_INCLUDE_DIR)
  message(FATAL_ERROR "jemalloc: libjemalloc_pic.a and jemalloc/jemalloc.h are required "
                      "(Debian: libjemalloc-dev)")
endif()
foreach(tool CMAKE_NM CMAKE_OBJCOPY CMAKE_AR)
  if(NOT ${tool})
    message(FATAL_ERROR "jemalloc: ${tool} is required to derive the private jemalloc")
  endif()
endforeach()

set(private_je_dir ${CMAKE_CURRENT_BINARY_DIR}/jemalloc_private)
set(private_je_archive ${private_je_dir}/libcuswap_jemalloc_private.a)
add_custom_command(
  OUTPUT ${private_je_archive}
  COMMAND ${CMAKE_COMMAND} -DCUSWAP_JEMALLOC_STEP=derive -DINPUT=${CUSWAP_JEMALLOC_PIC_ARCHIVE}
          -DOUTPUT=${private_je_archive} -DNM=${CMAKE_NM} -DOBJCOPY=${CMAKE_OBJCOPY}
          -DAR=${CMAKE_AR} -P ${CMAKE_CURRENT_LIST_FILE}
  DEPENDS ${CUSWAP_JEMALLOC_PIC_ARCHIVE} ${CMAKE_CURRENT_LIST_FILE}
  COMMENT "Deriving the private jemalloc (symbols prefixed ${private_je_prefix})"
  VERBATIM)
add_custom_target(cuswap_jemalloc_private_archive DEPENDS ${private_je_archive})

# jemalloc's public names, as its header lists them (`#  define je_X X`),
# declared under the private names.
file(STRINGS ${CUSWAP_JEMALLOC_INCLUDE_DIR}/jemalloc/jemalloc.h private_je_public
     REGEX "^#  define je_[A-Za-z0-9_]+ [A-Za-z0-9_]+$")
set(private_je_header
    "/* Generated by allocator/jemalloc.cmake (Note [A private jemalloc]): jemalloc's\n"
    " * API under the names of the private copy, ${private_je_prefix}<name>. */\n"
    "#pragma once\n#define JEMALLOC_NO_RENAME\n")
foreach(line IN LISTS private_je_public)
  string(REGEX REPLACE "^#  define je_([A-Za-z0-9_]+) .*" "\\1" name "${line}")
  list(APPEND private_je_header "#define je_${name} ${private_je_prefix}${name}\n")
endforeach()
list(APPEND private_je_header "#include <jemalloc/jemalloc.h>\n")
string(JOIN "" private_je_header ${private_je_header})
file(CONFIGURE OUTPUT ${private_je_dir}/include/cuswap_jemalloc/jemalloc_private.h
     CONTENT "${private_je_header}" @ONLY)

add_library(cuswap_jemalloc_private STATIC IMPORTED GLOBAL)
set_target_properties(cuswap_jemalloc_private PROPERTIES
  IMPORTED_LOCATION ${private_je_archive}
  INTERFACE_INCLUDE_DIRECTORIES "${private_je_dir}/include;${CUSWAP_JEMALLOC_INCLUDE_DIR}"
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${private_je_dir}/include;${CUSWAP_JEMALLOC_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m")
# Whatever links the stash exports nothing of it: jemalloc's API has default
# visibility, and so has the configuration string host_stash.cpp defines.
set_property(TARGET cuswap_jemalloc_private PROPERTY INTERFACE_LINK_OPTIONS
             "LINKER:--exclude-libs,libcuswap_jemalloc_private.a:libcuswap_host_stash.a")
add_dependencies(cuswap_jemalloc_private cuswap_jemalloc_private_archive)
set(CUSWAP_JEMALLOC_PRIVATE_ARCHIVE ${private_je_archive} CACHE INTERNAL
    "the derived private jemalloc archive")

# The pinned host stash: a private jemalloc arena on cuMemHostAlloc memory.
add_library(cuswap_host_stash STATIC host_stash.cpp)
target_link_libraries(cuswap_host_stash
  PUBLIC cuswap_allocator
  PRIVATE cuswap_jemalloc_private cuswap_warnings)
target_compile_definitions(cuswap_host_stash PRIVATE __CUDA_API_VERSION_INTERNAL)
