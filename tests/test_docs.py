"""The README documents every plugin hook: a hook added to cmbench/hookspecs.py without a word there fails.

The hooks are found the way pluggy finds them, not from a list kept by hand;
each must appear in README.md's "Writing a plugin" section together with the
declaration it returns (``cmbench.Adversary``, ...), read from its annotation.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pluggy
import pytest

from cmbench import hookspecs

README = Path(__file__).resolve().parents[1] / "README.md"


def hooks() -> dict[str, str]:
    """Each hook cmbench declares -> the declaration it returns (``cmbench.Estimator``, ...)."""
    manager = pluggy.PluginManager("cmbench")
    manager.add_hookspecs(hookspecs)
    found = {}
    for name in vars(manager.hook):
        if name.startswith("_"):
            continue
        returns = str(inspect.signature(getattr(hookspecs, name)).return_annotation)
        declared = re.search(r"cmbench\.[A-Z]\w*", returns)
        assert declared, f"hook {name}: its return annotation {returns!r} names no cmbench declaration"
        found[name] = declared.group(0)
    return found


def plugin_section() -> str:
    """README.md's section on writing a plugin, up to the next section of its level."""
    match = re.search(r"^## Writing a plugin\n(.*?)(?=^## |\Z)", README.read_text(), flags=re.S | re.M)
    assert match, f"{README} has no '## Writing a plugin' section"
    return match.group(1)


def test_the_example_plugin_of_the_tests_and_the_benchmarks_is_the_readmes_verbatim():
    """``tests/plugins/winsorized.py`` is what the tests and ``benchmarks/cache.py`` run as "the
    README's example": an edit of one without the other fails here."""
    code = plugin_section().split("```python\n", 1)[1].split("```", 1)[0]
    assert (Path(__file__).resolve().parent / "plugins" / "winsorized.py").read_text() == code


def test_the_hooks_are_found_by_introspection():
    assert {"register_estimators": "cmbench.Estimator", "register_metrics": "cmbench.Metric"}.items() \
        <= hooks().items()


@pytest.mark.parametrize("hook", sorted(hooks()))
def test_every_hook_is_documented_in_the_readme_with_what_it_returns(hook):
    section, declared = plugin_section(), hooks()[hook]
    rows = [line for line in section.splitlines() if f"`{hook}`" in line]
    assert rows, f"hook {hook} (cmbench/hookspecs.py) is not in README.md's 'Writing a plugin' section"
    assert any(f"`{declared}`" in row for row in rows), \
        f"README.md names hook {hook} but not, on the same line, what it returns ({declared})"


def test_the_readme_command_table_names_every_command_and_option():
    """README.md's "Command line" section: every command of `cmbench` and each of its options
    (either form of a --x/--no-x pair), found from the click group itself."""
    import click

    from cmbench.cli import main

    match = re.search(r"^## Command line\n(.*?)(?=^## |\Z)", README.read_text(), flags=re.S | re.M)
    assert match, f"{README} has no '## Command line' section"
    section = match.group(1)

    def walk(group, prefix):
        for name, command in group.commands.items():
            yield f"{prefix} {name}", command
            if isinstance(command, click.Group):
                yield from walk(command, f"{prefix} {name}")

    missing = []
    for path, command in walk(main, "cmbench"):
        words = path.split()
        if not re.search(r"`cmbench " + r"\s.*?".join(map(re.escape, words[1:])), section):
            missing.append(path)
        for param in command.params:
            forms = [o for o in (*param.opts, *param.secondary_opts) if o.startswith("-")]
            if forms and not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", section) for o in forms):
                missing.append(f"{path} {'/'.join(forms)}")
    assert not missing, f"README.md's command table misses: {missing}"


def test_the_readme_builtins_table_names_every_builtin_component(monkeypatch):
    """README.md's table of built-ins lists every component the built-in plugins register."""
    from cmbench.kinds import KINDS
    from cmbench.plugins import AUTOLOAD_ENV, load_plugins

    monkeypatch.setenv(AUTOLOAD_ENV, "1")  # the built-ins only, not what else is installed
    table = README.read_text().split("| kind | built-ins |", 1)[1].split("\n\n", 1)[0]
    registry = load_plugins(())
    missing = [f"{kind.singular} {name}" for kind in KINDS
               for name in registry.kind(kind.plural) if f"`{name}`" not in table]
    assert not missing, f"README.md's built-ins table misses: {missing}"
