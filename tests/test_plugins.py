"""The plugin host: discovery paths (built-ins, entry points, files, modules, suites) and validation."""
import textwrap

import pytest

import cmbench
from cmbench.errors import PluginError
from cmbench.plugins import load_plugins
from cmbench.suite import load_suite
from conftest import GOOD, assert_user_error, cli_inproc, write

PAPER_COMPONENTS = {
    "adversaries": {"hide-smallest"},
    "recoverers": {"none", "exact"},
    "estimators": {"mean", "cmedian"},
    "datasets": {"synthetic-gaussian"},
}


def test_builtins_are_registered_through_the_hooks():
    registry = cmbench.load_plugins()
    for kind, names in PAPER_COMPONENTS.items():
        assert names <= set(registry.kind(kind)), kind
        for name in names:
            assert registry.source(kind, name).plugin.startswith("cmbench.")
            assert registry.kind(kind)[name].description


def test_plugin_file(winsorized_file):
    registry = load_plugins([str(winsorized_file)])
    decl = registry.estimators["winsorized-mean"]
    assert decl.params == {"limit": 0.05}
    assert registry.source("estimators", "winsorized-mean").plugin == str(winsorized_file.resolve())


def test_dotted_module(tmp_path, monkeypatch, winsorized_file):
    (tmp_path / "my_cm_plugin.py").write_text(winsorized_file.read_text() + "\n__version__ = '2.3'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = load_plugins(["my_cm_plugin"])
    assert "winsorized-mean" in registry.estimators
    assert str(registry.source("estimators", "winsorized-mean")) == "my_cm_plugin 2.3"


def _installed_distribution(tmp_path, monkeypatch, plugin, module: str, version: str) -> None:
    """A real distribution on sys.path, as pip would install it: ``module`` (the plugin file's text)
    and a ``*.dist-info`` whose entry_points.txt names it in group ``cmbench`` (as ``winsor``).
    Each test uses its own module name: an imported module stays in sys.modules."""
    (tmp_path / f"{module}.py").write_text(plugin.read_text())
    name = module.replace("_", "-")
    info = tmp_path / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[cmbench]\nwinsor = {module}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_entry_point_through_importlib_metadata(tmp_path, monkeypatch, winsorized_file):
    _installed_distribution(tmp_path, monkeypatch, winsorized_file, "cm_winsor", "1.4.0")
    registry = load_plugins()
    assert "winsorized-mean" in registry.estimators
    source = registry.source("estimators", "winsorized-mean")
    assert source.plugin == "cm-winsor:winsor" and source.version == "1.4.0"


def test_suite_declared_plugin(tmp_path, write_suite, winsorized_file):
    (tmp_path / "plugs").mkdir()
    (tmp_path / "plugs" / "w.py").write_text(winsorized_file.read_text())
    path = write_suite("""
        name = "s"
        plugins = ["plugs/w.py"]
        [[experiment]]
        name = "e"
        datasets = [{name = "synthetic-gaussian", N = 50}]
        adversaries = ["hide-smallest"]
        budgets = [0.1]
        recoverers = ["none"]
        estimators = ["winsorized-mean", {name = "winsorized-mean", label = "w10", limit = 0.1}]
    """)
    suite = load_suite(path)
    ests = suite.experiments[0].estimators
    assert [e.label for e in ests] == ["winsorized-mean", "w10"]
    assert ests[1].params == {"limit": 0.1}


def test_duplicate_name_names_both_plugins(tmp_path, winsorized_file):
    other = tmp_path / "other.py"
    other.write_text(winsorized_file.read_text())
    with pytest.raises(PluginError) as err:
        load_plugins([str(winsorized_file), str(other)])
    msg = str(err.value)
    assert "winsorized-mean" in msg and "winsorized.py" in msg and "other.py" in msg


def test_same_name_from_the_command_line_and_the_suite_exits_2_naming_both(tmp_path, winsorized_file):
    second = tmp_path / "second.py"
    second.write_text(winsorized_file.read_text())
    path = write(tmp_path / "suite.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["second.py"]'))
    code, err = cli_inproc("suite", path, "--plugin", winsorized_file, "--out", tmp_path / "out")
    assert_user_error(code, err, "'winsorized-mean'", str(winsorized_file), str(second))
    assert not (tmp_path / "out").exists()


def test_duplicate_of_a_builtin(tmp_path):
    path = tmp_path / "dup.py"
    path.write_text(textwrap.dedent("""
        import numpy as np, cmbench
        @cmbench.hookimpl
        def register_estimators():
            return [cmbench.Estimator("mean", lambda X, *, rng: np.nanmean(X, 0))]
    """))
    with pytest.raises(PluginError, match=r"duplicate estimator name 'mean'.*cmbench\.estimators.*dup\.py"):
        load_plugins([str(path)])


def test_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import cmbench\n\ndef f(:\n    pass\n")
    with pytest.raises(PluginError, match=r"broken\.py:3: syntax error"):
        load_plugins([str(path)])


def test_import_error_names_file_and_line(tmp_path):
    path = tmp_path / "raises.py"
    path.write_text("import cmbench\nx = 1\nraise RuntimeError('boom')\n")
    with pytest.raises(PluginError, match=r"raises\.py failed to import: RuntimeError: boom \(.*raises\.py:3\)"):
        load_plugins([str(path)])


def test_missing_plugin_file_and_module(tmp_path):
    with pytest.raises(PluginError, match="does not exist"):
        load_plugins([str(tmp_path / "nope.py")])
    with pytest.raises(PluginError, match="not found"):
        load_plugins(["no_such_cmbench_plugin_module"])


@pytest.mark.parametrize("body, match", [
    ('cmbench.Estimator("Bad_Name", lambda X, *, rng: X.mean(0))', "kebab-case"),
    ('cmbench.Estimator("two-args", lambda X, Y, *, rng: X.mean(0))', "does not fit the contract"),
    ('cmbench.Estimator("no-rng", lambda X: X.mean(0))', "does not fit the contract"),
    ('cmbench.Estimator("bad-param", lambda X, *, rng: X.mean(0), params={"k": 1})', "does not fit"),
    ('cmbench.Recoverer("bad-mode", lambda X, *, rng, structure, rank: X)', "kind"),
    ('cmbench.Estimator("free", lambda X, *, rng: X.mean(0), cost=0)', "estimator 'free': cost 0 must be"),
    ('cmbench.Estimator("slow", lambda X, *, rng: X.mean(0), cost="high")', "cost 'high' must be a positive"),
])
def test_contract_violations_are_named(tmp_path, body, match):
    path = tmp_path / "bad.py"
    hook = "register_recoverers" if "Recoverer" in body else "register_estimators"
    path.write_text(f"import cmbench\n@cmbench.hookimpl\ndef {hook}():\n    return [{body}]\n")
    if match == "kind":  # a recoverer returned from the estimators hook would be wrong; this one is fine
        registry = load_plugins([str(path)])
        assert "bad-mode" in registry.recoverers
        return
    with pytest.raises(PluginError, match=match) as err:
        load_plugins([str(path)])
    assert "bad.py" in str(err.value)


def test_wrong_declaration_type(tmp_path):
    path = tmp_path / "wrongtype.py"
    path.write_text("import cmbench\n@cmbench.hookimpl\ndef register_estimators():\n"
                    "    return [cmbench.Recoverer('x', lambda X, *, rng, structure, rank: X)]\n")
    with pytest.raises(PluginError, match="expected cmbench.Estimator"):
        load_plugins([str(path)])


@pytest.mark.parametrize("value, loaded", [("1", False), ("yes", False), ("0", True), ("", True)])
def test_disable_plugin_autoload_skips_entry_points(tmp_path, monkeypatch, winsorized_file, value, loaded):
    _installed_distribution(tmp_path, monkeypatch, winsorized_file, "cm_winsor2", "1.0.0")
    monkeypatch.setenv("CMBENCH_DISABLE_PLUGIN_AUTOLOAD", value)
    registry = load_plugins()
    assert ("winsorized-mean" in registry.estimators) is loaded
    assert registry.autoload is loaded
    assert "mean" in registry.estimators  # built-ins are always loaded
    if not loaded:  # an explicit --plugin still loads when autoload is off
        assert "winsorized-mean" in load_plugins([str(winsorized_file)]).estimators


def test_plugins_command_says_when_autoload_is_off(monkeypatch):
    from click.testing import CliRunner

    from cmbench.cli import main

    monkeypatch.setenv("CMBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = CliRunner().invoke(main, ["plugins"])
    assert result.exit_code == 0
    assert "CMBENCH_DISABLE_PLUGIN_AUTOLOAD is set: entry-point plugins were not loaded" in result.output
    assert any(line.startswith("metric") and " mahalanobis " in line for line in result.output.splitlines())
    monkeypatch.delenv("CMBENCH_DISABLE_PLUGIN_AUTOLOAD")
    assert "CMBENCH_DISABLE_PLUGIN_AUTOLOAD" not in CliRunner().invoke(main, ["plugins"]).output


# ----------------------------------------------------------------------------- shared helpers

@pytest.mark.parametrize("spec, is_file", [
    ("mine.py", True), ("dir/mine", True), ("dir\\mine", True), ("C:\\plugins\\mine.py", True),
    ("my_pkg.plugin", False), ("cmbench.builtins.adversaries", False), ("plain", False),
])
def test_one_rule_says_whether_a_plugin_spec_is_a_path(spec, is_file):
    from cmbench.plugins import is_file_spec

    assert is_file_spec(spec) is is_file
    assert is_file_spec("suites/paper", ".toml") and is_file_spec("mine.toml", ".toml")
    assert not is_file_spec("paper", ".toml")


def test_a_suite_resolves_a_backslash_plugin_as_a_path_like_the_command_line(tmp_path):
    """The suite file's ``plugins = [...]`` follows the same rule as ``--plugin``: a
    separator makes a path (relative to the suite file), never a module name."""
    from cmbench.errors import SuiteError

    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\nplugins = ["sub\\\\missing"]\n[[experiment]]\nname = "e"\n')
    with pytest.raises(SuiteError, match=r"plugin file .*missing does not exist"):
        load_suite(suite)


def test_did_you_mean_shares_one_similarity_rule():
    from cmbench.plugins import choices_hint, close_matches, did_you_mean

    assert close_matches("cmedain", ["mean", "cmedian", "median"])[0] == "cmedian"
    assert did_you_mean("cmedain", ["mean", "cmedian"]) == "did you mean 'cmedian'?"
    assert did_you_mean("zzz", ["mean"]) == ""
    assert choices_hint("cmedain", ["mean", "cmedian"]) == "did you mean 'cmedian'? valid: cmedian, mean"
    assert choices_hint("x", []) == "none declared"


def test_describe_error_names_the_plugins_own_line(tmp_path):
    import importlib.util

    import numpy as np

    from cmbench.errors import describe_error

    path = tmp_path / "deep.py"
    path.write_text("import numpy as np\n\ndef fn(X):\n    return np.linalg.cholesky(-np.eye(2))\n")
    spec = importlib.util.spec_from_file_location("deep_plugin", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(np.linalg.LinAlgError) as info:
        module.fn(None)
    assert describe_error(info.value, module.fn).endswith(f"({path}:4)")  # the plugin's line
    assert describe_error(info.value, path).endswith(f"({path}:4)")
    assert f"({path}:4)" not in describe_error(info.value)  # else the innermost frame, inside NumPy
    frozen = np.zeros(2)
    frozen.setflags(write=False)
    with pytest.raises(ValueError) as info:
        frozen[0] = 1.0
    assert describe_error(info.value).startswith("ValueError: ")
    assert " - the plugin modified its input in place (" in describe_error(info.value)
