# Sourced by the device scripts, from the repository root, on a GPU machine that has no package
# registry (see ../shared/docs/gpu.md): unpack the carried bubblewrap (.deb/) and wheels (.whl/),
# put kgen and the wheels on the Python path, and make $OUT (what comes back from the machine).
if ! command -v bwrap >/dev/null && ls .deb/bubblewrap_*.deb >/dev/null 2>&1; then
  mkdir -p /opt/kgen-bw && for f in .deb/*.deb; do dpkg -x "$f" /opt/kgen-bw; done
  export PATH=/opt/kgen-bw/usr/bin:$PATH
fi
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /opt/kgen-site .whl/*.whl && export PYTHONPATH=/opt/kgen-site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kgen-out}; mkdir -p "$OUT"
