"""`chperf run`, `compare` and `report` refuse bad input with exit 2 before they write
anything: the output directory is not created, and with --force not emptied."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from artifacts.errors import ExitCode
from artifacts.outdir import MARKER, prepare_out_dir
from chperf.cli import main
from chperf.parser import build_parser
from chperf.reference import _documented, _subcommands
from tests.runs import verdict_rows, write_artifacts

TRUE = "/bin/true"  # a program that runs: the binary checks pass, nothing else happens
TEST = """<test>
    <query>SELECT sum(number) FROM numbers(1000000)</query>
    <query>SELECT max(number) FROM numbers(1000000)</query>
</test>
"""


@pytest.fixture()
def tests_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "tests"
    directory.mkdir()
    for name in ("sum_numbers", "sort_limit"):
        (directory / f"{name}.xml").write_text(TEST)
    return directory


def chperf(*argv: str) -> int:
    """main() as the shell calls it; argparse's own errors exit 2 too."""
    try:
        return main(list(argv))
    except SystemExit as e:
        return int(e.code or 0)


def run_args(tests_dir: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--tests", str(tests_dir), "--out", str(out), "--reference", TRUE,
            "--patched", TRUE, *extra]  # fmt: skip


def earlier_run(out: Path) -> Path:
    prepare_out_dir(out, force=False)
    (out / "run.json").write_text('{"schema_version": 1}')
    return out


# --- --force after a typo -------------------------------------------------------------------


@pytest.mark.parametrize(
    "typo",
    [
        ["--min-effect", "5"],
        ["--runs", "three"],
        ["--test", "sum_numbrs"],
        ["--query-index", "7"],
        ["--reference", "/no/such/clickhouse"],
        ["--servers-dir", "/no/such/dir"],
        ["--patched-config", "/no/such/overlay"],
        ["--tests", "/no/such/tests"],
        ["--calibration", "/no/such/calibration.tsv"],
    ],
)
def test_force_with_a_typo_in_another_option_leaves_the_output_directory_alone(
    tmp_path: Path, tests_dir: Path, typo: list[str]
) -> None:
    out = earlier_run(tmp_path / "out")
    assert chperf(*run_args(tests_dir, out, "--force", *typo)) == ExitCode.BAD_INPUT
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "run.json"]


def test_force_refuses_to_empty_the_directory_chperf_was_started_in(
    tmp_path: Path,
    tests_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work = earlier_run(tmp_path / "work")  # even holding chperf's marker
    monkeypatch.chdir(work)
    assert chperf(*run_args(tests_dir, Path("."), "--force")) == ExitCode.BAD_INPUT
    assert "which is the current directory: refused" in capsys.readouterr().err
    assert (work / "run.json").exists()


# --- binaries, test selection, servers directory: exit 2, --out not created ----------------


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.parametrize(
    ("binary", "said"),
    [
        ("missing", "no such file"),
        ("directory", "not a file"),
        ("not executable", "not executable"),
        ("text with exec permission", "does not run: Exec format error"),
        ("script whose interpreter is missing", "does not run: No such file or directory"),
        (
            "script that cannot run its command",
            "does not run: exited with 127 (command not found) when started with --version",
        ),
        ("crashing", "does not run: killed by SIGSEGV when started with --version"),
    ],
)
def test_a_binary_that_cannot_run_is_bad_input_before_the_output_directory_exists(
    tmp_path: Path, tests_dir: Path, capsys: pytest.CaptureFixture[str], binary: str, said: str
) -> None:
    path = tmp_path / "clickhouse"
    if binary == "directory":
        path.mkdir()
    elif binary == "not executable":
        path.write_text("#!/bin/sh\n")
    elif binary == "text with exec permission":
        executable(path, "this is not a program\n")
    elif binary == "script whose interpreter is missing":
        executable(path, "#!/no/such/interpreter\n")
    elif binary == "script that cannot run its command":
        executable(path, "#!/bin/sh\nno-such-command-anywhere\n")
    elif binary == "crashing":
        executable(path, "#!/bin/sh\nkill -SEGV $$\n")
    out = tmp_path / "out"
    code = chperf(*run_args(tests_dir, out), "--patched", str(path))
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    assert f"--patched {path}: {said}" in err
    assert not out.exists()


def test_an_unknown_test_name_is_refused_with_the_closest_names(
    tmp_path: Path, tests_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert chperf(*run_args(tests_dir, out, "--test", "sum_numbrs")) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert f"no such test in {tests_dir}: --test sum_numbrs (did you mean sum_numbers?)" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("selection", "said"),
    [
        (["--test", "sort_limit", "--query-index", "2"], "sort_limit has 2 queries, 0 to 1"),
        (["--query-index", "-1"], "sort_limit has 2 queries, 0 to 1, sum_numbers has"),
    ],
)
def test_a_query_index_the_selected_tests_lack_is_refused(
    tmp_path: Path,
    tests_dir: Path,
    capsys: pytest.CaptureFixture[str],
    selection: list[str],
    said: str,
) -> None:
    out = tmp_path / "out"
    assert chperf(*run_args(tests_dir, out, *selection)) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert f"--query-index {selection[-1]}: no such query ({said}" in err
    assert not out.exists()


@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_a_servers_dir_that_is_not_a_directory_is_refused(
    tmp_path: Path, tests_dir: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    servers = tmp_path / "servers"
    if kind == "a file":
        servers.write_text("")
    out = tmp_path / "out"
    code = chperf(*run_args(tests_dir, out, "--servers-dir", str(servers)))
    assert code == ExitCode.BAD_INPUT
    what = "no such directory" if kind == "missing" else "not a directory"
    assert f"--servers-dir {servers}: {what}" in capsys.readouterr().err
    assert not out.exists()


# --- thresholds and run counts ---------------------------------------------------------------


@pytest.mark.parametrize("option", ["--min-effect", "--unstable-threshold", "--fdr"])
def test_every_fraction_option_takes_a_percentage_or_a_fraction(option: str) -> None:
    dest = option.removeprefix("--").replace("-", "_")
    for command in ("run", "compare", "merge"):
        for text, value in (("5%", 0.05), ("0.05", 0.05), ("12.5%", 0.125), ("0", 0.0)):
            argv = [command, "x", "--out", "y"] if command == "merge" else [command]
            argv += ["x"] if command == "compare" else []
            args = build_parser().parse_args([*argv, option, text])
            assert getattr(args, dest) == pytest.approx(value), (command, text)


@pytest.mark.parametrize(
    ("option", "text", "said"),
    [
        ("--min-effect", "5", "argument --min-effect: 5 means +500%; did you mean 5% or 0.05?"),
        ("--min-effect", "1", "argument --min-effect: 1 means +100%; did you mean 1% or 0.01?"),
        ("--unstable-threshold", "10", "10 means +1000%; did you mean 10% or 0.1?"),
        ("--fdr", "5", "argument --fdr: 5 means 500%; did you mean 5% or 0.05?"),
        ("--min-effect", "100%", "100%: expected a percentage from 0% to below 100%"),
        ("--min-effect", "-0.05", "-0.05: expected a percentage from 0% to below 100%"),
        ("--min-effect", "five", "five: expected a percentage from 0% to below 100%"),
    ],
)
def test_a_threshold_that_cannot_mean_what_was_typed_is_refused_with_the_likely_meaning(
    capsys: pytest.CaptureFixture[str], option: str, text: str, said: str
) -> None:
    assert chperf("compare", "out", option, text) == ExitCode.BAD_INPUT
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--runs", "--max-runs"])
def test_a_run_count_that_can_give_no_verdict_is_refused(
    tmp_path: Path, tests_dir: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    out = tmp_path / "out"
    extra = [option, "2", "--min-runs", "2"] if option == "--max-runs" else [option, "2"]
    assert chperf(*run_args(tests_dir, out, *extra)) == ExitCode.BAD_INPUT
    assert f"{option} 2: below 3 runs a side no query gets a verdict" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(("runs", "warned"), [("3", True), ("5", True), ("6", False)])
def test_a_smoke_run_count_is_warned_to_give_only_inconclusive_verdicts(
    tmp_path: Path,
    tests_dir: Path,
    capsys: pytest.CaptureFixture[str],
    runs: str,
    warned: bool,
) -> None:
    # An unknown test stops the run after the run count was judged, before anything starts.
    out = tmp_path / "out"
    assert chperf(*run_args(tests_dir, out, "--runs", runs, "--test", "x")) == 2
    warning = f"warning: --runs {runs}: the paired test needs at least 6 runs a side"
    err = capsys.readouterr().err
    assert (warning in err) is warned
    assert ("will be 'inconclusive'" in err) is warned


def test_the_pooled_method_decides_from_three_runs_without_a_warning(
    tmp_path: Path, tests_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = run_args(tests_dir, out, "--runs", "3", "--method", "pooled", "--test", "x")
    assert chperf(*argv) == ExitCode.BAD_INPUT
    assert "warning: --runs" not in capsys.readouterr().err


def test_a_query_too_few_runs_could_decide_is_inconclusive_never_unstable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steady = (0.100, 0.101, 0.099, 0.1005, 0.102)
    noisy = (0.1, 0.2, 0.05, 0.3, 0.1)  # T far above the unstable threshold, were it computed
    out = write_artifacts(
        tmp_path / "run", {0: (steady, tuple(2 * v for v in steady)), 1: (steady, noisy)}
    )
    code = chperf("compare", str(out))
    rows = verdict_rows(out)
    assert {key: row[2] for key, row in rows.items()} == {
        ("t", "0"): "inconclusive",
        ("t", "1"): "inconclusive",
    }
    assert "5 pairs cannot reach the 1% level" in rows[("t", "0")][3]
    # Not failing, but never green either (README, "Verdicts"): nothing was judged.
    assert code == ExitCode.INCOMPLETE
    assert "chperf: incomplete: 2 inconclusive" in capsys.readouterr().err


# --- compare and report need a run -----------------------------------------------------------


@pytest.mark.parametrize("command", ["report", "compare"])
def test_report_and_compare_refuse_a_directory_that_holds_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    somewhere = tmp_path / "documents"
    somewhere.mkdir()
    (somewhere / "notes.txt").write_text("mine")
    assert chperf(command, str(somewhere)) == ExitCode.BAD_INPUT
    assert f"{somewhere}: holds no run (run.json is missing)" in capsys.readouterr().err
    assert sorted(os.listdir(somewhere)) == ["notes.txt"]


# --- relative paths --------------------------------------------------------------------------


def test_relative_paths_are_made_absolute_against_the_starting_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--reference", "bin/ch", "--patched", "../ch", "--tests", "t", "--out", "o",
            "--servers-dir", "s", "--reference-config", "r", "--patched-config", "p",
            "--shard-weights", "w.tsv", "--calibration", "c.tsv"]  # fmt: skip
    args = build_parser().parse_args(argv)
    monkeypatch.chdir("/")
    assert (args.reference, args.patched) == (tmp_path / "bin/ch", tmp_path / "../ch")
    assert args.tests == [tmp_path / "t"] and args.out == tmp_path / "o"
    assert args.servers_dir == tmp_path / "s" and args.shard_weights == tmp_path / "w.tsv"
    assert args.reference_config == [tmp_path / "r"] and args.patched_config == [tmp_path / "p"]
    assert args.calibration == tmp_path / "c.tsv"
    assert build_parser().parse_args(["run"]).out == Path("/chperf-out")


# --- help --------------------------------------------------------------------------------------


def test_every_option_and_argument_of_every_subcommand_has_a_help_text() -> None:
    parser = build_parser()
    missing = [
        f"{name}: {'/'.join(action.option_strings) or action.dest}"
        for name, _, sub in [("chperf", None, parser), *_subcommands(parser)]
        for action in _documented(sub)
        if not (action.help or "").strip()
    ]
    assert missing == []


pytestmark = pytest.mark.usefixtures("signal_handlers_restored")
