"""A GitHub Actions job run on this machine, for the tests of ci/github/perf-check.yml.

The `run:` scripts run verbatim in bash as the runner starts them, with the step's `env:`
evaluated from the same expressions, `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY` and the `if:`
conditions; `uses:` steps are played by handlers the test gives (a checkout copies files, an
upload keeps a directory). Expressions: contexts, literals, `!`, `==`, `!=`, `&&`, `||`,
parentheses, and the functions the workflow uses. Not a general Actions runner: what it does
not know is an error, never a guess.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||[!(),])"
    r"|(?P<name>[A-Za-z_][\w-]*(?:\.[A-Za-z_*][\w-]*)*))"
)
_INTERPOLATION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]  # `shell: bash` on Linux


class ExpressionError(Exception):
    pass


def _tokens(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ExpressionError(f"cannot read {text[position:]!r} in {text!r}")
        kind = match.lastgroup
        assert kind is not None
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "", 0.0)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()  # GitHub compares strings ignoring case
    return bool(a == b)


class _Parser:
    def __init__(self, text: str, context: Mapping[str, Any], status: str) -> None:
        self.tokens = _tokens(text)
        self.text = text
        self.context = context
        self.status = status
        self.at = 0

    def parse(self) -> Any:
        value = self._or()
        if self.at != len(self.tokens):
            raise ExpressionError(f"unexpected {self.tokens[self.at][1]!r} in {self.text!r}")
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise ExpressionError(f"{self.text!r} ends too early")
        self.at += 1
        return self.tokens[self.at - 1]

    def _or(self) -> Any:
        value = self._and()
        while self._peek() == "||":
            self._take()
            right = self._and()
            value = value if _truthy(value) else right
        return value

    def _and(self) -> Any:
        value = self._compare()
        while self._peek() == "&&":
            self._take()
            right = self._compare()
            value = right if _truthy(value) else value
        return value

    def _compare(self) -> Any:
        value = self._unary()
        while self._peek() in ("==", "!="):
            op = self._take()[1]
            right = self._unary()
            value = _equal(value, right) if op == "==" else not _equal(value, right)
        return value

    def _unary(self) -> Any:
        if self._peek() == "!":
            self._take()
            return not _truthy(self._unary())
        return self._primary()

    def _primary(self) -> Any:
        kind, text = self._take()
        if text == "(":
            value = self._or()
            self._expect(")")
            return value
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text) if "." in text else int(text)
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r} in {self.text!r}")
        if text in ("true", "false"):
            return text == "true"
        if self._peek() == "(":
            return self._call(text)
        return self._lookup(text)

    def _expect(self, token: str) -> None:
        if self._take()[1] != token:
            raise ExpressionError(f"expected {token!r} in {self.text!r}")

    def _call(self, name: str) -> Any:
        self._expect("(")
        args = []
        while self._peek() != ")":
            args.append(self._or())
            if self._peek() == ",":
                self._take()
        self._expect(")")
        functions: dict[str, Callable[..., Any]] = {
            "always": lambda: True,
            "success": lambda: self.status == "success",
            "failure": lambda: self.status == "failure",
            "cancelled": lambda: False,
            "fromJSON": json.loads,
            "toJSON": json.dumps,
            "format": lambda f, *a: re.sub(r"\{(\d+)\}", lambda m: str(a[int(m.group(1))]), f),
        }
        if name not in functions:
            raise ExpressionError(f"function {name}() is not known here")
        return functions[name](*args)

    def _lookup(self, path: str) -> Any:
        value: Any = self.context
        parent = ""
        for part in path.split("."):
            if isinstance(value, Mapping) and part in value:
                value, parent = value[part], part
            elif parent == "outputs":  # an output a step or job did not set is null
                return None
            else:
                raise ExpressionError(f"{path}: no value for {part!r} in this test's context")
        return value


def evaluate(expression: str, context: Mapping[str, Any], status: str = "success") -> Any:
    """One expression, with or without its `${{ }}`."""
    text = expression.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    return _Parser(text, context, status).parse()


def interpolate(value: Any, context: Mapping[str, Any]) -> str:
    """A `with:`/`env:` value: text with `${{ }}` parts replaced by their values."""
    if not isinstance(value, str):
        return json.dumps(value) if isinstance(value, bool) else str(value)

    def text(match: re.Match[str]) -> str:
        result = evaluate(match.group(1), context)
        if isinstance(result, bool):
            return "true" if result else "false"
        return "" if result is None else str(result)

    return _INTERPOLATION.sub(text, value)


@dataclass
class StepResult:
    name: str
    ran: bool
    outcome: str = "skipped"  # success, failure, skipped
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


UsesHandler = Callable[[dict[str, str], Path], dict[str, str]]


@dataclass
class JobRun:
    steps: list[StepResult]
    status: str
    summary: str  # the job summary: every step's GITHUB_STEP_SUMMARY, in order
    outputs: dict[str, str]

    def step(self, name: str) -> StepResult:
        return next(s for s in self.steps if s.name == name)


def run_job(
    job: Mapping[str, Any],
    context: dict[str, Any],
    workspace: Path,
    handlers: Mapping[str, UsesHandler],
    environ: Mapping[str, str],
) -> JobRun:
    """Run the job's steps in order, as the runner would."""
    steps: dict[str, Any] = {}
    context = {**context, "steps": steps}
    results: list[StepResult] = []
    summaries: list[str] = []
    status = "success"
    for index, step in enumerate(job["steps"]):
        name = str(step.get("name") or step.get("uses") or f"step {index}")
        condition = str(step.get("if", "success()"))
        if "always()" not in condition and "failure()" not in condition and status != "success":
            condition = f"success() && ({condition})"
        if not _truthy(evaluate(condition, context, status)):
            result = StepResult(name, ran=False)
        elif "run" in step:
            env = {k: interpolate(v, context) for k, v in (step.get("env") or {}).items()}
            result, summary = _run_script(name, str(step["run"]), env, workspace, environ, index)
            summaries.append(summary)
        else:
            handler = handlers.get(str(step["uses"]))
            if handler is None:
                raise ExpressionError(f"no handler for `uses: {step['uses']}`")
            given = {k: interpolate(v, context) for k, v in (step.get("with") or {}).items()}
            result = StepResult(name, True, "success", 0, outputs=handler(given, workspace))
        results.append(result)
        if "id" in step:
            steps[str(step["id"])] = {"outputs": result.outputs, "outcome": result.outcome}
        if result.outcome == "failure":
            status = "failure"
    outputs = {k: interpolate(v, context) for k, v in (job.get("outputs") or {}).items()}
    return JobRun(results, status, "".join(summaries), outputs)


def _run_script(
    name: str,
    script: str,
    env: Mapping[str, str],
    workspace: Path,
    environ: Mapping[str, str],
    index: int,
) -> tuple[StepResult, str]:
    """The script's result and what it wrote to the job summary."""
    if "${{" in script:
        raise ExpressionError(f"step {name!r}: an expression inside the script (use env:)")
    files = workspace.parent / f"runner-files-{workspace.name}"
    files.mkdir(exist_ok=True)
    script_file = files / f"step-{index}.sh"
    script_file.write_text(script)
    output, summary = files / f"output-{index}", files / f"summary-{index}"
    output.write_text("")
    summary.write_text("")
    full_env = {
        **environ,
        **env,
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(workspace),
    }
    done = subprocess.run(
        [*SHELL, str(script_file)],
        cwd=workspace,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    result = StepResult(
        name,
        True,
        "success" if done.returncode == 0 else "failure",
        done.returncode,
        done.stdout,
        done.stderr,
        _outputs(output.read_text()),
    )
    return result, summary.read_text()


def _outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT's `name=value` lines (the workflow writes no multi-line values)."""
    pairs = (line.partition("=") for line in text.splitlines() if "=" in line)
    return {name: value for name, _, value in pairs}


def base_environ(path_first: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment, the given bin directory first on PATH, plus `extra`."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    environ["PATH"] = f"{path_first}{os.pathsep}{environ.get('PATH', '')}"
    return {**environ, **extra}
