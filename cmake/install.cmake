# SPDX-License-Identifier: Apache-2.0
# Installation in FHS places and the Debian package (docs/deploy.md).
#
#   cmake --install build [--prefix /usr]      # /usr/local by default
#   cmake --build build --target package       # build/hotline_VERSION_ARCH.deb
#
# Man pages are generated from the CLI definition itself (help2man runs
# `hotline [COMMAND] --help`), so they cannot drift from the binary.
include(GNUInstallDirs)
# `install` and cpack install what is built (the binary, the man pages) without
# building every test first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# --- man pages: hotline(1) and hotline-COMMAND(1) per subcommand -----------------
# The subcommand paths the man pages cover; a test (cli.man_pages) checks this
# list against the binary's help, so a new subcommand fails until it is added.
set(HOTLINE_MAN_COMMANDS probe record cost scenario "scenario list" "scenario run" serve
    fixes "fixes list" "fixes show" "fixes apply" restore validate diff diagnose discover report vm ab help)
find_program(HELP2MAN help2man)
set(HOTLINE_MAN_PAGES)
if(HELP2MAN)
  set(man_dir ${CMAKE_BINARY_DIR}/man)
  set(man_script ${CMAKE_SOURCE_DIR}/cmake/man_page.sh)
  set(man_include ${CMAKE_SOURCE_DIR}/dist/man/hotline.h2m)
  set(page ${man_dir}/hotline.1)
  add_custom_command(OUTPUT ${page} ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
    COMMAND ${man_script} ${HELP2MAN} $<TARGET_FILE:hotline> $<TARGET_FILE:hotline> ${man_include}
            ${PROJECT_VERSION} ${page} "find kernel cache-line contention and prove a fix removes it"
    DEPENDS hotline ${man_script} ${man_include} COMMENT "man page hotline.1" VERBATIM)
  list(APPEND HOTLINE_MAN_PAGES ${page}.gz)
  foreach(cmd IN LISTS HOTLINE_MAN_COMMANDS)
    string(REPLACE " " "-" stem "hotline-${cmd}")
    set(page ${man_dir}/${stem}.1)
    set(wrapper ${man_dir}/${stem})
    # help2man runs one program with --help; this one is `hotline CMD`.
    file(GENERATE OUTPUT ${wrapper} CONTENT "#!/bin/sh\nexec '$<TARGET_FILE:hotline>' ${cmd} \"$@\"\n"
         FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    add_custom_command(OUTPUT ${page} ${page}.gz
      COMMAND ${man_script} ${HELP2MAN} $<TARGET_FILE:hotline> ${wrapper} ${man_include} ${PROJECT_VERSION} ${page}
      DEPENDS hotline ${man_script} ${man_include} COMMENT "man page ${stem}.1" VERBATIM)
    list(APPEND HOTLINE_MAN_PAGES ${page}.gz)
  endforeach()
  add_custom_target(man ALL DEPENDS ${HOTLINE_MAN_PAGES})
  install(FILES ${HOTLINE_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: no man pages (scripts/setup installs it)")
endif()

# --- files ------------------------------------------------------------------------
install(TARGETS hotline RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/dist/bash-completion/hotline
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
# The unit and the configuration depend on the prefix the install runs with (the
# .deb installs to /usr, `cmake --install` to /usr/local unless told), so they are
# placed at install time: cmake/install_config.cmake.
install(CODE "set(HOTLINE_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
              set(HOTLINE_BINARY_DIR \"${CMAKE_BINARY_DIR}\")
              set(HOTLINE_BINDIR \"${CMAKE_INSTALL_BINDIR}\")")
install(SCRIPT ${CMAKE_SOURCE_DIR}/cmake/install_config.cmake)
install(FILES ${CMAKE_SOURCE_DIR}/dist/serve.toml DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES ${CMAKE_SOURCE_DIR}/dist/prometheus/hotline-alerts.yml
              ${CMAKE_SOURCE_DIR}/dist/prometheus/hotline-alerts.test.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/hotline/prometheus)
install(FILES ${CMAKE_SOURCE_DIR}/dist/grafana/hotline-dashboard.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/hotline/grafana)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/schemas DESTINATION ${CMAKE_INSTALL_DATADIR}/hotline)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/docs/metrics.md ${CMAKE_SOURCE_DIR}/docs/runbook.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The licenses as Debian wants them (copyright-format 1.0), and the changelog
# compressed without a timestamp, so two builds give the same bytes.
install(FILES ${CMAKE_SOURCE_DIR}/dist/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
set(HOTLINE_CHANGELOG_GZ ${CMAKE_BINARY_DIR}/changelog.gz)
add_custom_command(OUTPUT ${HOTLINE_CHANGELOG_GZ}
  COMMAND sh -c "gzip -9nc \"$0\" > \"$1\"" ${CMAKE_SOURCE_DIR}/dist/debian/changelog ${HOTLINE_CHANGELOG_GZ}
  DEPENDS ${CMAKE_SOURCE_DIR}/dist/debian/changelog COMMENT "changelog.gz" VERBATIM)
add_custom_target(changelog ALL DEPENDS ${HOTLINE_CHANGELOG_GZ})
install(FILES ${HOTLINE_CHANGELOG_GZ} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_SOURCE_DIR}/dist/debian/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME hotline)

# --- the Debian package -------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hotline)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The project has no mail address of its own: a distributor sets theirs
# (-DHOTLINE_PACKAGE_MAINTAINER="Name <address>").  The default's lintian tags
# are overridden, with this reason, in dist/debian/lintian-overrides.
set(HOTLINE_PACKAGE_MAINTAINER "hotline maintainers <hotline@localhost>" CACHE STRING
    "Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${HOTLINE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "eBPF profiler for kernel cache-line contention and fix validator")
set(CPACK_PACKAGE_DESCRIPTION "hotline finds which CPUs and NUMA nodes hand kernel objects to each
other, applies a fix in private network namespaces and decides whether it
removed the contention.  It also exports the counters to Prometheus as a
systemd service (not started on install).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus")
# The maintainer scripts use deb-systemd-helper and deb-systemd-invoke.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "init-system-helpers (>= 1.54~)")
# The binary is stripped and its debug information goes to hotline-dbgsym (a
# .ddeb, /usr/lib/debug/.build-id/), as Debian's own packages ship it.  CPack
# splits only binaries that are not stripped yet: no CPACK_STRIP_FILES.
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Install with DESTDIR and the real prefix, so install_config.cmake sees /usr.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/dist/debian/conffiles ${CMAKE_SOURCE_DIR}/dist/debian/postinst
    ${CMAKE_SOURCE_DIR}/dist/debian/prerm ${CMAKE_SOURCE_DIR}/dist/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
