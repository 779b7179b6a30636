"""core/named_files.py: which names a text gives, and which stay in the workspace (issue 39,
item 13: prose writes followed an inner `..` or a symlinked name out of it)."""
from __future__ import annotations

import pytest

from baseagent.helps.named_files import inside, named_in


@pytest.mark.parametrize("text, names", [
    ("Fix hamming.py", ["hamming.py"]),
    ("./a.py and ././b.py, then a.py again", ["a.py", "b.py"]),
    ("keep .hidden.py", [".hidden.py"]),  # lstrip('./') once made it hidden.py
    ("src/app/main.go", ["src/app/main.go"]),
    ("../x.py", []),
    ("src/../../x.py", []),
    ("sub/../.git/hooks/pre-commit.sample", []),
    ("/etc/x.conf", []),
    ("see http://host/a.py", []),
    ("write .git/hooks/x.sample", [".git/hooks/x.sample"]),  # inside: the sandbox decides
])
def test_named_in(text, names):
    assert named_in(text) == names


def test_inside_resolves_symlinks_and_dots(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (tmp_path / "out.py").write_text("x")
    (ws / "link.py").symlink_to(tmp_path / "out.py")
    (ws / "dir").symlink_to(tmp_path, target_is_directory=True)
    (ws / "ok.py").write_text("x")
    (ws / "alias.py").symlink_to(ws / "ok.py")
    assert inside(ws, "ok.py") and inside(ws, "alias.py") and inside(ws, "new.py")
    assert inside(ws, "sub/../ok.py")
    for name in ("link.py", "dir/out.py", "sub/../../out.py", "../out.py", str(tmp_path),
                 ".", ""):
        assert not inside(ws, name), name
