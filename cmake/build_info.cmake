# Run at build time (cmake -P): writes OUT with the version and the git commit of the source tree, only
# when they changed, so a new commit relinks what prints them and nothing else rebuilds.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12 --exclude=*
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "#define RGBAQ_VERSION \"${VERSION}\"\n#define RGBAQ_GIT_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
