# install.mk — `make install` / `make uninstall` (included by the Makefile).
#
#   make install PREFIX=/usr/local DESTDIR=/staging
#
# Layout (LIBDIR = PREFIX/lib unless given):
#   BINDIR/proflink-run, proflink-system, proflink-fifo-cat, proflink-inspect, proflink-agent
#                                                   (the tools that were built)
#   LIBDIR/elastic-jvmti-linux-proflink-ARCH.so    glibc preload library; the profiler finds it
#                                                   by this file name, so it is never renamed
#   LIBDIR/libproflink.so -> the above             for -lproflink (its SONAME is the above)
#   LIBDIR/libproflink.a                           static variant (call proflink_init())
#   LIBDIR/proflink/musl/elastic-jvmti-linux-proflink-musl-ARCH.so, libproflink.so, .a
#                                                   musl variant, kept out of glibc's search path
#   INCLUDEDIR/proflink.h, INCLUDEDIR/proflink.hpp, PKGCONFIGDIR/proflink.pc
# proflink-run finds the libraries relative to itself (BINDIR/../lib) and, failing that, in the
# LIBDIR written into it here, so a DESTDIR tree works before it is moved into place.
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MUSL_LIBDIR  := $(LIBDIR)/proflink/musl
INSTALL      ?= install
LDCONFIG     ?= ldconfig

PROFLINK_VERSION := $(shell sed -n 's/^\#define PROFLINK_VERSION_STRING "\(.*\)"/\1/p' include/proflink.h)
INSTALL_TOOLS    := $(filter $(BUILD)/proflink-inspect $(BUILD)/proflink-agent,$(ALL))
INSTALL_MUSL     := $(filter $(MUSL_LIB),$(ALL))

install: all
	$(INSTALL) -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(LIBDIR)' '$(DESTDIR)$(INCLUDEDIR)' \
	    '$(DESTDIR)$(PKGCONFIGDIR)'
	$(INSTALL) -m 755 $(LIB) '$(DESTDIR)$(LIBDIR)/$(SONAME)'
	ln -sf $(SONAME) '$(DESTDIR)$(LIBDIR)/libproflink.so'
	$(INSTALL) -m 644 $(BUILD)/libproflink.a '$(DESTDIR)$(LIBDIR)/libproflink.a'
ifneq ($(INSTALL_MUSL),)
	$(INSTALL) -d '$(DESTDIR)$(MUSL_LIBDIR)'
	$(INSTALL) -m 755 $(MUSL_LIB) '$(DESTDIR)$(MUSL_LIBDIR)/$(MUSL_SONAME)'
	ln -sf $(MUSL_SONAME) '$(DESTDIR)$(MUSL_LIBDIR)/libproflink.so'
	$(INSTALL) -m 644 $(BUILD)/musl/libproflink.a '$(DESTDIR)$(MUSL_LIBDIR)/libproflink.a'
endif
	$(INSTALL) -m 644 include/proflink.h '$(DESTDIR)$(INCLUDEDIR)/proflink.h'
	$(INSTALL) -m 644 include/proflink.hpp '$(DESTDIR)$(INCLUDEDIR)/proflink.hpp'
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@SONAME@|$(SONAME)|g' \
	    -e 's|@MUSL_SONAME@|$(MUSL_SONAME)|g' -e 's|@VERSION@|$(PROFLINK_VERSION)|g' \
	    scripts/proflink.pc.in >'$(DESTDIR)$(PKGCONFIGDIR)/proflink.pc'
	chmod 644 '$(DESTDIR)$(PKGCONFIGDIR)/proflink.pc'
	sed -e "s|^installed_libdir='@LIBDIR@'|installed_libdir='$(LIBDIR)'|" \
	    -e "s|^installed_version='@VERSION@'|installed_version='$(PROFLINK_VERSION)'|" \
	    scripts/proflink-run >'$(DESTDIR)$(BINDIR)/proflink-run'
	chmod 755 '$(DESTDIR)$(BINDIR)/proflink-run'
	sed -e "s|v='@VERSION@'|v='$(PROFLINK_VERSION)'|" -e "s|^installed_libdir='@LIBDIR@'|installed_libdir='$(LIBDIR)'|" \
	    scripts/proflink-system >'$(DESTDIR)$(BINDIR)/proflink-system'
	chmod 755 '$(DESTDIR)$(BINDIR)/proflink-system'
	$(INSTALL) -m 755 scripts/proflink-fifo-cat '$(DESTDIR)$(BINDIR)/proflink-fifo-cat'
ifneq ($(INSTALL_TOOLS),)
	$(INSTALL) -m 755 $(INSTALL_TOOLS) '$(DESTDIR)$(BINDIR)/'
endif
# a real install (no staging DESTDIR) refreshes the dynamic linker's cache so that -lproflink
# and the library's SONAME resolve at once
	$(if $(DESTDIR),,$(LDCONFIG))

# A library still listed in /etc/ld.so.preload is taken out of it first (its previous content
# restored), or nothing is removed and the command to run is printed: a listed file that is gone
# makes every program of the host print a loader error. The system under DESTDIR is the one whose
# preload file counts.
uninstall:
	PROFLINK_SYSTEM_ROOT='$(DESTDIR)' sh scripts/proflink-system release \
	    '$(LIBDIR)/$(SONAME)' '$(MUSL_LIBDIR)/$(MUSL_SONAME)'
	rm -f '$(DESTDIR)$(BINDIR)/proflink-run' '$(DESTDIR)$(BINDIR)/proflink-system' '$(DESTDIR)$(BINDIR)/proflink-inspect' \
	    '$(DESTDIR)$(BINDIR)/proflink-fifo-cat' \
	    '$(DESTDIR)$(BINDIR)/proflink-agent' \
	    '$(DESTDIR)$(LIBDIR)/$(SONAME)' '$(DESTDIR)$(LIBDIR)/libproflink.so' \
	    '$(DESTDIR)$(LIBDIR)/libproflink.a' \
	    '$(DESTDIR)$(MUSL_LIBDIR)/$(MUSL_SONAME)' '$(DESTDIR)$(MUSL_LIBDIR)/libproflink.so' \
	    '$(DESTDIR)$(MUSL_LIBDIR)/libproflink.a' \
	    '$(DESTDIR)$(INCLUDEDIR)/proflink.h' '$(DESTDIR)$(INCLUDEDIR)/proflink.hpp' \
	    '$(DESTDIR)$(PKGCONFIGDIR)/proflink.pc'
	rmdir '$(DESTDIR)$(MUSL_LIBDIR)' '$(DESTDIR)$(LIBDIR)/proflink' 2>/dev/null || :

# make deb: a Debian package of the install tree (PREFIX=/usr, the libraries in the multiarch
# directory), with the musl build and the tools but not proflink-agent (a test stand-in for the
# profiler, which would pull in libunwind). Installing it enables nothing host-wide.
DEB_ARCH       := $(if $(filter x86_64,$(ARCH)),amd64,arm64)
DEB_LIBDIR     := /usr/lib/$(ARCH)-linux-gnu
DEB_STAGE      := $(BUILD)/deb/stage
DEB            := $(BUILD)/deb/proflink_$(PROFLINK_VERSION)_$(DEB_ARCH).deb
DEB_MAINTAINER ?= proflink maintainers <proflink@localhost>
.PHONY: deb
deb: $(DEB)
$(DEB): all scripts/install.mk scripts/proflink-run scripts/proflink-system scripts/proflink-fifo-cat \
        $(wildcard packaging/deb/*)
	@test -n '$(INSTALL_MUSL)' || { echo 'make deb: the package ships the musl build: install musl-tools' >&2; exit 1; }
	rm -rf '$(DEB_STAGE)'
	$(MAKE) -s install DESTDIR='$(abspath $(DEB_STAGE))' PREFIX=/usr LIBDIR='$(DEB_LIBDIR)' \
	    INSTALL_TOOLS='$(filter-out %/proflink-agent,$(INSTALL_TOOLS))'
	packaging/deb/build-deb.sh '$(DEB_STAGE)' '$(PROFLINK_VERSION)' '$(DEB_ARCH)' '$(DEB_LIBDIR)' \
	    '$(DEB_MAINTAINER)' '$@'
