"""cmbench.data: locating, verifying and fetching data files, against a local HTTP server.

No test touches the network: downloads come from an ``http.server`` on
127.0.0.1 (``CMBENCH_MIRROR``), and the cache is a tmp folder. The tests that
serve real data files copy them from ``$CMBENCH_DATA_DIR`` (skipped when it is
unset, unless ``CI`` is set, where they fail instead).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import os
import shutil
import threading
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

import cmbench
from cmbench import data as cmdata
from cmbench.builtins import datasets as ds
from cmbench.cli import main

SOURCE = os.environ.get("CMBENCH_DATA_DIR")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def server(tmp_path):
    """(root folder served, base URL, list of requested paths)."""
    root = tmp_path / "mirror"
    root.mkdir()
    requests = []

    class Handler(_Handler):
        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}", requests
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def env(monkeypatch, tmp_path, server):
    """A clean environment: empty tmp cache, no data dir, the mirror on the local server."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("CMBENCH_CACHE_DIR", str(cache))
    monkeypatch.delenv("CMBENCH_DATA_DIR", raising=False)
    monkeypatch.delenv("CMBENCH_OFFLINE", raising=False)
    monkeypatch.setenv("CMBENCH_MIRROR", server[1])
    return SimpleNamespace(cache=cache, root=server[0], base=server[1], requests=server[2])


@pytest.fixture
def source():
    if not SOURCE:
        if os.environ.get("CI"):
            pytest.fail("CI is set but CMBENCH_DATA_DIR is not: the fetch tests must run in CI")
        pytest.skip("CMBENCH_DATA_DIR is not set")
    return Path(SOURCE)


def _serve(decl, source: Path, root: Path) -> None:
    for f in decl.files:
        target = root / decl.folder / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / decl.folder / f.path, target)


def _toy(*files: tuple[str, bytes], url="") -> cmbench.Dataset:
    return cmbench.Dataset("toy", lambda *, instance, rng: None, folder="toy",
                           files=tuple(cmbench.DataFile(p, sha(b), url) for p, b in files))


def _leftovers(cache: Path) -> list[str]:
    return [p.name for p in cache.iterdir() if p.name.startswith(".")] if cache.exists() else []


# --------------------------------------------------------------- real files

@pytest.mark.parametrize("decl", [ds.BREAST_CANCER, ds.WEARABLE_SENSOR], ids=lambda d: d.name)
def test_fetch_real_dataset_lands_verified(env, source, decl):
    _serve(decl, source, env.root)
    folder = cmdata.fetch(decl, progress=False)
    assert folder == env.cache / decl.folder
    for f in decl.files:
        assert sha((folder / f.path).read_bytes()) == f.sha256
    assert cmdata.locate(decl) == folder
    assert _leftovers(env.cache) == []
    assert len(env.requests) == len(decl.files)
    cmdata.fetch(decl, progress=False)  # already cached: nothing downloaded again
    assert len(env.requests) == len(decl.files)


def test_require_prefers_source_files_then_the_shipped_table_then_a_download(env, source):
    decl = ds.BLOOD_TRANSFUSION
    assert cmdata.require(decl) == Path(decl.table.path)  # no source anywhere: the shipped table
    assert env.requests == []  # ... and nothing is downloaded for it
    _serve(decl, source, env.root)
    bare = dataclasses.replace(decl, table=None)  # a data set that ships no table downloads
    assert cmdata.require(bare) == env.cache / "blood_transfusion"
    assert len(env.requests) == 1
    arrays, origin = cmdata.load_arrays(decl)  # cached source files now take precedence
    assert origin == f"source files in {env.cache / 'blood_transfusion'}"
    data = decl.fn(instance=0, rng=None, **decl.params)
    assert data.shape == (748, 5)
    assert len(env.requests) == 1


def test_tampered_download_names_file_and_digests_and_caches_nothing(env, source):
    decl = ds.BLOOD_TRANSFUSION
    _serve(decl, source, env.root)
    served = env.root / decl.folder / "transfusion.data"
    tampered = served.read_bytes().replace(b"2 ,50,12500,98 ,1", b"2 ,50,12500,99 ,1", 1)
    served.write_bytes(tampered)
    with pytest.raises(cmdata.DataError) as info:
        cmdata.fetch(decl, progress=False)
    message = str(info.value)
    assert "transfusion.data" in message and "--verify" in message
    assert decl.files[0].sha256 in message and sha(tampered) in message
    assert not (env.cache / decl.folder / "transfusion.data").exists()
    assert _leftovers(env.cache) == []
    with pytest.raises(cmdata.ChecksumError, match=sha(tampered)):
        cmdata.require(dataclasses.replace(decl, table=None))  # the same message, not "not found"


# ------------------------------------------------------------ --verify

def _verify(*args):
    result = CliRunner().invoke(main, ["datasets", "fetch", *args, "--verify"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_verify_equal_table_caches_the_verified_files(env, source):
    decl = ds.BREAST_CANCER
    _serve(decl, source, env.root)
    code, out = _verify("breast-cancer")
    assert code == 0, out
    assert "breast-cancer: the derived table equals the shipped one" in out
    assert str(env.cache / decl.folder) in out
    assert cmdata.locate(decl) == env.cache / decl.folder
    assert _leftovers(env.cache) == []


def test_verify_compares_values_not_bytes(env, source):
    decl = ds.BLOOD_TRANSFUSION
    _serve(decl, source, env.root)
    served = env.root / decl.folder / "transfusion.data"
    resaved = served.read_bytes().replace(b"\r\n", b"\n")  # other line endings, same values
    served.write_bytes(resaved)
    result = cmdata.verify(decl, progress=False)
    assert result.difference is None
    assert result.bytes_differ == ["transfusion.data"]
    assert result.digests["transfusion.data"] == (decl.files[0].sha256, sha(resaved))
    assert result.cached is None and not (env.cache / decl.folder / "transfusion.data").exists()
    code, out = _verify("blood-transfusion")
    assert code == 0 and "equals the shipped one" in out and sha(resaved) in out and "not cached" in out


def test_verify_names_the_first_difference(env, source):
    decl = ds.BREAST_CANCER
    _serve(decl, source, env.root)
    served = env.root / decl.folder / "breast-cancer-wisconsin.data"
    lines = served.read_bytes().split(b"\n")
    fields = lines[22].split(b",")  # row 23, column 7 of the file = Bare Nuclei
    assert fields[6] != b"9"
    old = fields[6].decode()
    fields[6] = b"9"
    lines[22] = b",".join(fields)
    served.write_bytes(b"\n".join(lines))
    code, out = _verify("breast-cancer")
    assert code == 1, out
    assert "differs from the shipped one" in out
    assert "row 23, column 'Bare Nuclei'" in out and f"{float(old)!r}" in out and "9.0" in out
    assert "(1 of 6990 values differ)" in out
    assert cmdata.locate(decl) is None  # the tampered bytes were not cached


def test_verify_without_a_table_or_source(env, source):
    toy = _toy(("a.csv", b"1\n"))
    with pytest.raises(cmdata.DataError, match="ships no table"):
        cmdata.verify(toy, progress=False)
    code, out = _verify("leaf")  # nothing served: the download fails with a one-line error
    assert code == 2


# -------------------------------------------------------------- tables

def test_table_round_trip_keeps_every_bit(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 4))
    X[:, 1] = rng.integers(0, 5, 500)  # few distinct values: stored as values + index
    X[:3, 1] = [-0.0, np.inf, np.nan]
    X[7, 2] = -0.0
    odd_nan = np.array([0x7FF8_0000_0000_0BAD], dtype=np.uint64).view(np.float64)[0]
    X[9, 1] = odd_nan
    arrays = {"X": X, "columns": np.array(["a", "b", "c", "d"]), "code": np.arange(500, dtype=np.uint8),
              "v": X[:, 1].copy()}
    path = cmdata.write_table(tmp_path / "t.npz", arrays, {"licence": "CC BY 4.0"})
    back, meta = cmdata.read_table(path)
    assert meta["licence"] == "CC BY 4.0" and meta["arrays"]["X"]["columns"][1] == "dictionary"
    assert meta["arrays"]["X"]["columns"][0] == "raw"
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and back[name].shape == array.shape
        assert back[name].tobytes() == array.tobytes(), name
    assert cmdata.compare_tables(arrays, back) is None
    again = cmdata.write_table(tmp_path / "u.npz", arrays, {"licence": "CC BY 4.0"})
    assert again.read_bytes() == path.read_bytes()  # reproducible bytes
    with np.load(path) as plain:  # plain numpy opens it too
        assert "meta" in plain.files


def test_compare_tables_messages():
    a = {"X": np.array([[1.0, 2.0], [3.0, np.nan]]), "columns": np.array(["p", "q"])}
    assert cmdata.compare_tables(a, {k: v.copy() for k, v in a.items()}) is None
    b = {"X": np.array([[1.0, 2.0], [3.0, 4.0]]), "columns": a["columns"]}
    assert cmdata.compare_tables(a, b) == ("array 'X' row 2, column 'q': nan in the shipped table, "
                                           "4.0 derived (1 of 4 values differ)")
    c = {"X": np.array([[1.0, -0.0], [3.0, np.nan]]), "columns": a["columns"]}
    assert "row 1, column 'q'" in cmdata.compare_tables({**a, "X": np.array([[1.0, 0.0], [3.0, np.nan]])}, c)
    assert "shape (2, 2) in the shipped table, (1, 2) derived" in cmdata.compare_tables(a, {**a, "X": a["X"][:1]})
    assert "'columns' is absent from the derived table" in cmdata.compare_tables(a, {"X": a["X"]})


def test_damaged_table_is_a_one_line_data_error(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(cmdata.DataError, match="bad.npz: cannot read the table"):
        cmdata.read_table(bad)


def test_datasets_command_says_which_copy_is_used(env, source, monkeypatch):
    result = CliRunner().invoke(main, ["datasets"])
    assert result.exit_code == 0
    rows = {line.split()[0]: line for line in result.output.splitlines()[1:]}
    assert "shipped table" in rows["leaf"] and ds.LEAF.table.path in rows["leaf"]
    assert "699x10" in rows["breast-cancer"]
    monkeypatch.setenv("CMBENCH_DATA_DIR", str(source))
    rows = {line.split()[0]: line for line in CliRunner().invoke(main, ["datasets"]).output.splitlines()[1:]}
    assert "source files" in rows["leaf"] and str(source / "leaf") in rows["leaf"]
    assert "generated" in rows["synthetic-gaussian"]
    assert env.requests == []


# ----------------------------------------------------------------- generic

def test_one_bad_file_of_many_caches_none(env):
    good, bad = b"1,2\n3,4\n", b"5,6\n"
    decl = _toy(("sub/good.csv", good), ("bad.csv", bad))
    (env.root / "toy" / "sub").mkdir(parents=True)
    (env.root / "toy" / "sub" / "good.csv").write_bytes(good)
    (env.root / "toy" / "bad.csv").write_bytes(b"5,7\n")
    with pytest.raises(cmdata.DataError, match=rf"bad\.csv has SHA-256 {sha(b'5,7' + bytes([10]))}"):
        cmdata.fetch(decl, progress=False)
    assert not (env.cache / "toy" / "sub" / "good.csv").exists()
    assert _leftovers(env.cache) == []


def test_zip_member_url_without_mirror(env, monkeypatch):
    monkeypatch.delenv("CMBENCH_MIRROR")
    payload = b"0.1,0.2\n0.3,0.4\n"
    with zipfile.ZipFile(env.root / "pack.zip", "w") as zf:
        zf.writestr("pack/leaf.csv", payload)
        zf.writestr("pack/other.txt", b"x")
    decl = _toy(("leaf.csv", payload), url=f"{env.base}/pack.zip#leaf.csv")
    folder = cmdata.fetch(decl, progress=True)
    assert (folder / "leaf.csv").read_bytes() == payload
    assert env.requests == ["/pack.zip"]
    absent = _toy(("nothere.csv", payload), url=f"{env.base}/pack.zip#nothere.csv")
    with pytest.raises(cmdata.DataError, match="no member 'nothere.csv'"):
        cmdata.fetch(absent, progress=False)


def test_mirror_url_layout(env):
    decl = _toy(("S1 Dataset/d1p01M", b""))
    assert cmdata.file_url(decl, decl.files[0]) == f"{env.base}/toy/S1%20Dataset/d1p01M"


def test_unreachable_source_says_where_it_looked_and_how_to_fetch(env, monkeypatch):
    monkeypatch.setenv("CMBENCH_MIRROR", env.base + "/nothing-here")
    decl = _toy(("a.csv", b"1\n"))
    with pytest.raises(cmdata.DataError) as info:
        cmdata.require(decl)
    message = str(info.value)
    assert "cmbench datasets fetch toy" in message and str(env.cache / "toy") in message
    assert "404" in message


def test_offline_never_downloads(env, monkeypatch):
    monkeypatch.setenv("CMBENCH_OFFLINE", "1")
    decl = _toy(("a.csv", b"1\n"))
    (env.root / "toy").mkdir()
    (env.root / "toy" / "a.csv").write_bytes(b"1\n")
    with pytest.raises(cmdata.DataError, match="CMBENCH_OFFLINE"):
        cmdata.require(decl)
    assert env.requests == []


def test_locate_order_partial_folders_and_wrong_digest(env, monkeypatch, tmp_path):
    a, b = b"a\n", b"b\n"
    decl = _toy(("a.txt", a), ("b.txt", b))
    data_dir = tmp_path / "data"
    (data_dir / "toy").mkdir(parents=True)
    (data_dir / "toy" / "a.txt").write_bytes(a)  # partial: b.txt missing
    (env.cache / "toy").mkdir(parents=True)
    (env.cache / "toy" / "a.txt").write_bytes(a)
    (env.cache / "toy" / "b.txt").write_bytes(b)
    monkeypatch.setenv("CMBENCH_DATA_DIR", str(data_dir))
    assert cmdata.data_dirs() == [data_dir, env.cache]
    assert cmdata.locate(decl) == env.cache / "toy"
    (data_dir / "toy" / "b.txt").write_bytes(b"B\n")  # complete now, but b.txt is wrong
    with pytest.raises(cmdata.ChecksumError) as info:
        cmdata.locate(decl)
    assert str(data_dir / "toy" / "b.txt") in str(info.value)
    assert sha(b) in str(info.value) and sha(b"B\n") in str(info.value)


def test_digests_are_cached_per_path_size_mtime(env, monkeypatch):
    payload = b"x,y\n1,2\n"
    decl = _toy(("t.csv", payload))
    (env.cache / "toy").mkdir(parents=True)
    path = env.cache / "toy" / "t.csv"
    path.write_bytes(payload)
    calls = []
    real_hash = cmdata._hash_file
    monkeypatch.setattr(cmdata, "_hash_file", lambda p: calls.append(p) or real_hash(p))
    for _ in range(3):
        assert cmdata.locate(decl) == env.cache / "toy"
    assert len(calls) == 1
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    cmdata.locate(decl)
    assert len(calls) == 2


def test_cache_dir_fallbacks(monkeypatch, tmp_path):
    monkeypatch.delenv("CMBENCH_CACHE_DIR", raising=False)
    monkeypatch.delenv("CMBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cmdata.data_dirs() == [tmp_path / "xdg" / "cmbench"]
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cmdata.cache_dir() == tmp_path / "home" / ".cache" / "cmbench"


def test_fetch_generated_dataset_is_an_error(env):
    with pytest.raises(cmdata.DataError, match="nothing to fetch"):
        cmdata.fetch(ds.SYNTHETIC[0], progress=False)
    assert cmdata.locate(ds.SYNTHETIC[0]) is None


def test_status_rows(env):
    present = _toy(("p.txt", b"p"))
    (env.cache / "toy").mkdir(parents=True)
    (env.cache / "toy" / "p.txt").write_bytes(b"p")
    absent = cmbench.Dataset("gone", present.fn, folder="gone", shape=(3, 2), rank=1,
                             files=(cmbench.DataFile("g.txt", sha(b"g")),))
    broken = cmbench.Dataset("broken", present.fn, folder="toy",
                             files=(cmbench.DataFile("p.txt", sha(b"q")),))
    registry = SimpleNamespace(datasets={"toy": present, "gone": absent, "broken": broken,
                                         "synthetic-gaussian": ds.SYNTHETIC[0]})
    rows = {row["name"]: row for row in cmdata.status(registry)}
    assert rows["toy"]["present"] is True and rows["toy"]["where"] == str(env.cache / "toy")
    assert rows["toy"]["copy"] == "source files"
    assert rows["gone"] == {"name": "gone", "shape": (3, 2), "rank": 1, "present": False, "copy": None,
                            "where": [str(env.cache / "gone")], "error": None}
    assert rows["broken"]["present"] is False and sha(b"p") in rows["broken"]["error"]
    assert rows["synthetic-gaussian"]["present"] is None and rows["synthetic-gaussian"]["rank"] == 8
    shipped = {row["name"]: row for row in cmdata.status(SimpleNamespace(datasets={"leaf": ds.LEAF}))}["leaf"]
    assert shipped["present"] is True and shipped["copy"] == "shipped table"
    assert shipped["where"] == ds.LEAF.table.path
    assert env.requests == []  # status never downloads
