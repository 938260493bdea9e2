"""The output directory: --force replaces only what chperf wrote, never the working directory,
the home directory or an ancestor of either, and says what it removes."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.errors import ChperfError, ExitCode
from artifacts.outdir import MARKER, check_replaceable, prepare_out_dir


def earlier_run(out: Path) -> Path:
    """A directory as `chperf run` leaves it: the marker, run.json and a table."""
    prepare_out_dir(out, force=False)
    (out / "run.json").write_text('{"schema_version": 1}')
    (out / "runs.tsv").write_text("test\n")
    return out


def test_a_new_output_directory_gets_the_marker(tmp_path: Path) -> None:
    out = tmp_path / "a" / "out"
    prepare_out_dir(out, force=False)
    assert sorted(p.name for p in out.iterdir()) == [MARKER]


def test_force_replaces_a_run_chperf_wrote_and_says_what_it_removes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = earlier_run(tmp_path / "out")
    (out / "profiles").mkdir()
    prepare_out_dir(out, force=True)
    assert sorted(p.name for p in out.iterdir()) == [MARKER]
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"chperf: --force: removing 4 entries ({MARKER}, profiles, run.json, runs.tsv) from {out}"
    ]


def test_force_refuses_a_directory_without_the_marker_and_says_what_it_would_remove(
    tmp_path: Path,
) -> None:
    out = tmp_path / "important"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    (out / "run.json").write_text("{}")  # looks like a run; chperf did not write it
    with pytest.raises(ChperfError) as raised:
        prepare_out_dir(out, force=True)
    assert raised.value.exit_code is ExitCode.BAD_INPUT
    message = str(raised.value)
    assert f"--force would remove 2 entries (run.json, thesis.tex) from {out}" in message
    assert f"it holds no {MARKER}" in message
    assert (out / "thesis.tex").read_text() == "years of work"


def test_a_long_listing_is_cut_to_five_names_and_a_count(tmp_path: Path) -> None:
    out = tmp_path / "many"
    out.mkdir()
    for name in "abcdefg":
        (out / name).write_text("")
    with pytest.raises(ChperfError, match=r"7 entries \(a, b, c, d, e, \.\.\. 2 more\)"):
        prepare_out_dir(out, force=True)


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("work/dir", "which is the current directory"),
        ("work", "which is an ancestor of the current directory"),
        ("home/me", "which is the home directory"),
        ("home", "which is an ancestor of the home directory"),
        ("/", "which is an ancestor of the current directory"),
    ],
)
def test_force_never_empties_the_working_or_home_directory_or_their_ancestors(
    tmp_path: Path, where: str, said: str
) -> None:
    cwd = earlier_run(tmp_path / "work" / "dir")
    home = earlier_run(tmp_path / "home" / "me")
    out = tmp_path / where
    if where != "/":
        (out / MARKER).touch()  # even when chperf wrote it
    with pytest.raises(ChperfError, match=f"--force would remove .*, {said}") as raised:
        check_replaceable(out, cwd, home)
    assert "refused" in str(raised.value)
    assert (cwd / "run.json").exists() and (home / "run.json").exists()


def test_force_refuses_the_working_directory_named_through_a_symlink(tmp_path: Path) -> None:
    cwd = earlier_run(tmp_path / "work")
    link = tmp_path / "link"
    link.symlink_to(cwd)
    with pytest.raises(ChperfError, match="which is the current directory"):
        check_replaceable(link, cwd, tmp_path / "home")


def test_without_force_a_marked_run_is_refused_with_the_force_hint(tmp_path: Path) -> None:
    out = earlier_run(tmp_path / "out")
    with pytest.raises(ChperfError, match="already holds a run") as raised:
        prepare_out_dir(out, force=False)
    assert "pass --force" in raised.value.hint
    assert (out / "runs.tsv").exists()
