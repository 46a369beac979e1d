# Each library exposes its own headers, and only them, through an include root of its own in the build
# tree: `<root>/<folder>` links to the folder. A target sees the roots of what it links, so an include
# that crosses an arrow of DESIGN.md the wrong way ("engine/" including "daemon/...") fails to build.
#
# rgbaq_expose_headers(TARGET FOLDER [HEADERS h1 h2 ...]): the whole folder, or only the named headers
# (daemon/ lends cli/ its header-only protocol this way).
function(rgbaq_expose_headers target folder)
  cmake_parse_arguments(arg "" "" "HEADERS" ${ARGN})
  set(root "${PROJECT_BINARY_DIR}/include_roots/${target}")
  if(arg_HEADERS)
    file(MAKE_DIRECTORY "${root}/${folder}")
    foreach(header IN LISTS arg_HEADERS)
      file(CREATE_LINK "${CMAKE_CURRENT_SOURCE_DIR}/${header}" "${root}/${folder}/${header}" SYMBOLIC)
    endforeach()
  else()
    file(MAKE_DIRECTORY "${root}")
    file(CREATE_LINK "${CMAKE_CURRENT_SOURCE_DIR}" "${root}/${folder}" SYMBOLIC)
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE "${root}")
  else()
    target_include_directories(${target} PUBLIC "${root}")
  endif()
endfunction()
