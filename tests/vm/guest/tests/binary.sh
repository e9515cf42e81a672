# SPDX-License-Identifier: Apache-2.0
# The guest runs the host's build byte for byte (the BPF objects are embedded in it
# as skeletons): the "binary" check compares these digests with the host's.
# hlvm-timeout: 30
sha256sum /bin/hotline
hotline --version
