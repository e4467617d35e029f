# The Debian package (`cpack -G DEB` in a build folder; deploy/debian/test-package.sh builds,
# installs, uses and purges it). It holds what `cmake --install` installs (the binary in
# /usr/bin, the pack in /usr/share/faultline/rules, the documented example config and its logs)
# plus, in the `package` component that a plain `cmake --install` leaves out, what only makes
# sense at /: the config in /etc/faultline/ (a conffile), the systemd unit, the README and docs/.
# postinst creates the `faultline` system user; postrm --purge removes it and the agent's state.
include(GNUInstallDirs)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/debian/faultline.yaml
        DESTINATION /etc/faultline COMPONENT package EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/faultline.service
        DESTINATION lib/systemd/system COMPONENT package EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT package EXCLUDE_FROM_ALL)
# The README's links point into docs/, so the documentation goes beside it.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT package EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME faultline)
set(CPACK_PACKAGE_VENDOR faultline)
set(CPACK_PACKAGE_CONTACT "faultline maintainers <faultline@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "recognise known failures in build and ML-training logs, for Prometheus and alerts")
set(CPACK_PACKAGE_DESCRIPTION
    "faultline tails build and training logs as they are written, recognises known failures\n\
(DeepSpeed, PyTorch, CUDA, NCCL, compilers, clusters) by fingerprint rules, counts them for\n\
Prometheus and names root cause and fix. `faultline scan` diagnoses a finished log.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# Every component in one package: the default one and `package`.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified package)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Runtime dependencies from the libraries the binary links (dpkg-shlibdeps).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/deploy/debian/conffiles
    ${CMAKE_SOURCE_DIR}/deploy/debian/postinst
    ${CMAKE_SOURCE_DIR}/deploy/debian/prerm
    ${CMAKE_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
