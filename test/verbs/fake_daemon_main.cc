/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// fake-metaroced SOCKET: the tests' stand-in daemon, for trying verbs tools
// against the shim by hand:
//   fake-metaroced /tmp/mr.sock &
//   LD_LIBRARY_PATH=build/lib/verbs METAROCE_SOCKET=/tmp/mr.sock ibv_devinfo -v

#include <stdio.h>

#include "fake_daemon.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SOCKET_PATH\n", argv[0]);
    return 2;
  }
  return metaroce::test::RunFakeDaemon(argv[1]);
}
