# The Debian package (issue 18): `cpack -G DEB` in a Release build dir makes
# crawld_<version>-1_<arch>.deb. packaging/build-deb.sh does the whole thing
# with Debian's hardening flags; docs/OPERATIONS.md, "Installing the Debian
# package", says what it installs and how to run it.
#
# The package holds what `cmake --install` installs (crawld and crawlctl in
# /usr/bin, the default config and unit in /usr/share/crawld), plus the files
# of the component "deb" below, which a plain `cmake --install` leaves out:
#   /lib/systemd/system/crawld.service   conf/crawld.service, /usr/bin paths
#   /etc/crawld/crawl.toml               conffile: conf/crawler.toml with
#                                        data_dir = /var/lib/crawld
#   /etc/crawld/seeds.txt                conffile: the service's seed URLs
#   /usr/share/doc/crawld/               README.md, docs/*.md and *.png, the Grafana
#                                        dashboard, copyright, changelog
#   /usr/share/man/man8/crawld.8.gz, man1/crawlctl.1.gz, lintian overrides
# The maintainer scripts (packaging/postinst, prerm, postrm) create the
# crawld system user and /var/lib/crawld; they do not enable the service.
# tests/package builds the package and installs it into a throwaway root.
include(GNUInstallDirs)

set(CRAWLD_DEB_MAINTAINER "crawld maintainers <maintainers@users.noreply.a-seed-745a28ce.example>"
    CACHE STRING "Maintainer field of the Debian package")
set(CRAWLD_DEB_RELEASE 1 CACHE STRING "Debian revision of the package")

set(_pkg_src ${PROJECT_SOURCE_DIR}/packaging)
set(_pkg_out ${PROJECT_BINARY_DIR}/packaging)
set(CRAWLD_DEB_VERSION "${PROJECT_VERSION}-${CRAWLD_DEB_RELEASE}")
# The packaged files below are derived at configure time: configure again
# when their sources change.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/conf/crawler.toml
             ${PROJECT_SOURCE_DIR}/conf/crawld.service
             ${_pkg_src}/crawler.toml.head ${_pkg_src}/changelog.in
             ${_pkg_src}/crawld.8 ${_pkg_src}/crawlctl.1
             ${_pkg_src}/postinst ${_pkg_src}/prerm ${_pkg_src}/postrm
             ${_pkg_src}/conffiles)

# /etc/crawld/crawl.toml: the default config with the service's data_dir.
# Derived from conf/crawler.toml so that it follows the defaults; a default
# that no longer reads `data_dir = "data"` stops the configure step here
# rather than shipping a config that writes into the working directory.
file(READ ${PROJECT_SOURCE_DIR}/conf/crawler.toml _toml)
set(_from "\ndata_dir = \"data\"\n")
string(FIND "${_toml}" "${_from}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "cmake/crawld-package.cmake: conf/crawler.toml has no "
          "line 'data_dir = \"data\"' to point at /var/lib/crawld")
endif()
string(REPLACE "${_from}" "\ndata_dir = \"/var/lib/crawld\"\n" _toml "${_toml}")
file(READ ${_pkg_src}/crawler.toml.head _head)
file(CONFIGURE OUTPUT ${_pkg_out}/crawler.toml CONTENT "${_head}${_toml}"
     @ONLY)

# The unit: conf/crawld.service with the packaged binary's path, under a
# header that says where it comes from. Its command line must name the
# files this package installs and its scripts and docs refer to.
set(_bindir "/usr/${CMAKE_INSTALL_BINDIR}")
file(READ ${PROJECT_SOURCE_DIR}/conf/crawld.service _unit)
set(_exec "ExecStart=/usr/local/bin/crawld --config /etc/crawld/crawl.toml --seeds /etc/crawld/seeds.txt --data /var/lib/crawld ")
string(FIND "${_unit}" "\n${_exec}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "cmake/crawld-package.cmake: conf/crawld.service has "
          "no line '${_exec}...': update the package (packaging/, "
          "docs/OPERATIONS.md) to its new paths")
endif()
string(REPLACE "/usr/local/bin/crawld" "${_bindir}/crawld" _unit "${_unit}")
string(FIND "${_unit}" "[Unit]" _at)
string(SUBSTRING "${_unit}" ${_at} -1 _unit)
file(CONFIGURE OUTPUT ${_pkg_out}/crawld.service CONTENT
     "# Installed by the crawld Debian package (from conf/crawld.service).
# Config /etc/crawld/crawl.toml, seeds /etc/crawld/seeds.txt, data
# /var/lib/crawld; local changes: systemctl edit crawld.
# Operator guide: /usr/share/doc/crawld/docs/OPERATIONS.md.
${_unit}" @ONLY)

configure_file(${_pkg_src}/changelog.in ${_pkg_out}/changelog @ONLY)
# Debian wants the changelog and man pages compressed with -9n (no name, no
# time stamp, so the same sources give the same bytes).
find_program(CRAWLD_GZIP gzip REQUIRED)
foreach(_f ${_pkg_out}/changelog ${_pkg_src}/crawld.8 ${_pkg_src}/crawlctl.1)
  get_filename_component(_name ${_f} NAME)
  if(_name STREQUAL "changelog")
    set(_name changelog.Debian)
  endif()
  execute_process(COMMAND ${CRAWLD_GZIP} -9nc ${_f}
                  OUTPUT_FILE ${_pkg_out}/${_name}.gz
                  COMMAND_ERROR_IS_FATAL ANY)
endforeach()

# Maintainer scripts and the conffiles list, with the modes dpkg expects.
foreach(_f postinst prerm postrm)
  file(COPY ${_pkg_src}/${_f} DESTINATION ${_pkg_out}/control
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                        GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()
file(COPY ${_pkg_src}/conffiles DESTINATION ${_pkg_out}/control
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

# Absolute destinations are the point here (/etc, /lib): CPack installs them
# under its staging directory (CPACK_SET_DESTDIR below).
install(FILES ${_pkg_out}/crawld.service DESTINATION /lib/systemd/system
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${_pkg_out}/crawler.toml DESTINATION /etc/crawld
        RENAME crawl.toml COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${_pkg_src}/seeds.txt DESTINATION /etc/crawld
        COMPONENT deb EXCLUDE_FROM_ALL)
set(_docdir /usr/share/doc/crawld)
# The pictures too: README.md and docs/OPERATIONS.md show the console's.
file(GLOB _docs ${PROJECT_SOURCE_DIR}/docs/*.md ${PROJECT_SOURCE_DIR}/docs/*.png)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${_pkg_src}/copyright
              ${_pkg_out}/changelog.Debian.gz
        DESTINATION ${_docdir} COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${_docs} DESTINATION ${_docdir}/docs
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${_pkg_out}/crawld.8.gz DESTINATION /usr/share/man/man8
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${_pkg_out}/crawlctl.1.gz DESTINATION /usr/share/man/man1
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${_pkg_src}/lintian-overrides DESTINATION
        /usr/share/lintian/overrides RENAME crawld COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/conf/grafana/crawld.json
        DESTINATION ${_docdir}/grafana COMPONENT deb EXCLUDE_FROM_ALL)

# The default install also puts conf/crawld.service, the unit for a
# /usr/local install, into share/crawld: the package has its own.
install(CODE "file(REMOVE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/crawld/crawld.service\")"
        COMPONENT deb EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME crawld)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${CRAWLD_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "polite, distributed web crawler daemon")
set(CPACK_PACKAGE_DESCRIPTION
    "crawld crawls the web from seed URLs into ISO 28500 WARC files, obeying
robots.txt (RFC 9309) and per-host and per-address politeness delays.
Worker processes share the hosts by a consistent-hash ring, on one machine
or several over Redis; LevelDB checkpoints survive a crash; an admin HTTP
API, crawlctl and Prometheus metrics steer and watch a running crawl.
.
This package runs one crawl as the systemd service crawld, as user crawld,
with its data in /var/lib/crawld.")
# DESTDIR staging, so that the absolute destinations land in the package;
# the prefix is /usr whatever CMAKE_INSTALL_PREFIX the build has.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# One package: the default install plus the component "deb".
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified deb)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${CRAWLD_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_SECTION web)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/crawld/crawld")
# Library dependencies come from dpkg-shlibdeps; the maintainer scripts
# need adduser (deb-systemd-invoke and -helper are essential), the unit's
# ExecReload /bin/kill (procps, not in a minimal Debian).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, procps")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${_pkg_out}/control/postinst ${_pkg_out}/control/prerm
    ${_pkg_out}/control/postrm ${_pkg_out}/control/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
