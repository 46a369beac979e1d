# Each library exposes its own headers, and only them, through an include root of its own in the build
# tree: `<root>/<folder>` links to the folder. A target sees the roots of what it links, so an include
# that crosses an arrow of DESIGN.md the wrong way ("engine/" including "daemon/...") fails to build.
#
# rgbaq_expose_headers(TARGET FOLDER [HEADERS h1 h2 ...]): the whole folder (a path from the top of the
# source tree), or only the named headers
# (daemon/ lends cli/ its header-only protocol this way). FOLDER may be a room of a folder
# ("daemon/api"): then the target's root holds that room alone.
function(rgbaq_expose_headers target folder)
  cmake_parse_arguments(arg "" "" "HEADERS" ${ARGN})
  set(root "${PROJECT_BINARY_DIR}/include_roots/${target}")
  if(IS_SYMLINK "${root}/${folder}")
    # A build tree configured when this root linked the whole folder: writing the headers' links
    # through that link would replace the sources themselves.
    file(REMOVE "${root}/${folder}")
  endif()
  if(arg_HEADERS)
    file(MAKE_DIRECTORY "${root}/${folder}")
    foreach(header IN LISTS arg_HEADERS)
      file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${folder}/${header}" "${root}/${folder}/${header}" SYMBOLIC)
    endforeach()
  else()
    get_filename_component(parent "${root}/${folder}" DIRECTORY)
    file(MAKE_DIRECTORY "${parent}")
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${folder}" "${root}/${folder}" SYMBOLIC)
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE "${root}")
  else()
    target_include_directories(${target} PUBLIC "${root}")
  endif()
endfunction()

# rgbaq_embed_file(TARGET FILE SYMBOL): compiles FILE (relative to the calling folder) into TARGET as
# `std::string_view rgbaq::embedded::SYMBOL()`, rebuilt when FILE changes.
function(rgbaq_embed_file target file symbol)
  set(in "${CMAKE_CURRENT_SOURCE_DIR}/${file}")
  set(out "${CMAKE_CURRENT_BINARY_DIR}/embedded/${symbol}.cpp")
  add_custom_command(OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DIN=${in} -DOUT=${out} -DSYMBOL=${symbol} -P "${PROJECT_SOURCE_DIR}/cmake/embed_file.cmake"
    DEPENDS "${in}" "${PROJECT_SOURCE_DIR}/cmake/embed_file.cmake" VERBATIM)
  target_sources(${target} PRIVATE "${out}")
endfunction()
