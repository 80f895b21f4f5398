# Sourced by the shell launchers: the Python that runs the jobs. $PYTHON when set, else the project's .venv (what
# the set-up commands create), else python3; a plain python3 outside the venv cannot import `official`.
# Expects ROOT, the repository root.
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
