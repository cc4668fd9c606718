#!/usr/bin/env bash
# Fill the git-ignored .deb/ and .whl/ folders that scripts/device-check.sh unpacks on a GPU machine
# that has no package registry (Python 3.12, x86-64): Debian's bubblewrap, and openai with the
# packages it needs that the device image lacks. Run here, in the repository root.
set -euo pipefail
mkdir -p .deb .whl
(cd .deb && apt-get download bubblewrap)
fetch() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "$1"
}
# The openai this machine has (the version the tests ran), else the registry's newest.
openai_version=$(python3 -c "import importlib.metadata as m; print(m.version('openai'))" \
  2>/dev/null || true)
for pkg in "openai${openai_version:+==$openai_version}" distro jiter pydantic sniffio annotated-types \
    typing-inspection httpx2 httpcore2 anyio typing-extensions truststore idna h11; do
  fetch "$pkg"
done
# pydantic pins pydantic-core exactly: fetch the version it names.
core=$(unzip -p .whl/pydantic-2*.whl '*/METADATA' | sed -n 's/^Requires-Dist: pydantic-core==//p')
fetch "pydantic-core==$core"
ls .deb .whl
