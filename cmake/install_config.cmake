# SPDX-License-Identifier: Apache-2.0
# Runs at install time (install(SCRIPT) from cmake/install.cmake), when the real
# prefix is known: the systemd unit with this install's paths, and the example
# configuration as /etc/hotline/serve.toml (PREFIX/etc/hotline under any prefix
# but /usr).  An existing configuration is never overwritten.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(etc_dir /etc)
  set(unit_dir /lib/systemd/system)
else()
  set(etc_dir ${CMAKE_INSTALL_PREFIX}/etc)
  set(unit_dir ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()
set(HOTLINE_BIN ${CMAKE_INSTALL_PREFIX}/${HOTLINE_BINDIR}/hotline)
set(HOTLINE_CONFIG ${etc_dir}/hotline/serve.toml)
set(unit ${HOTLINE_BINARY_DIR}/dist/hotline.service)
configure_file(${HOTLINE_SOURCE_DIR}/dist/hotline.service.in ${unit} @ONLY)
file(INSTALL ${unit} DESTINATION ${unit_dir})  # file(INSTALL) adds DESTDIR itself
if(NOT EXISTS $ENV{DESTDIR}${HOTLINE_CONFIG})
  file(INSTALL ${HOTLINE_SOURCE_DIR}/dist/serve.toml DESTINATION ${etc_dir}/hotline)
else()
  message(STATUS "Kept existing: $ENV{DESTDIR}${HOTLINE_CONFIG}")
endif()
