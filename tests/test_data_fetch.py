"""cmbench.data: locating, verifying and fetching data files, against a local HTTP server.

No test touches the network: downloads come from an ``http.server`` on
127.0.0.1 (``CMBENCH_MIRROR``), and the cache is a tmp folder. The tests that
serve real data files copy them from ``$CMBENCH_DATA_DIR`` (skipped when it is
unset, unless ``CI`` is set, where they fail instead).
"""
from __future__ import annotations

import functools
import hashlib
import http.server
import os
import shutil
import threading
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

import cmbench
from cmbench import data as cmdata
from cmbench.builtins import datasets as ds

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


def test_require_fetches_then_loads(env, source):
    _serve(ds.BLOOD_TRANSFUSION, source, env.root)
    data = ds.BLOOD_TRANSFUSION.fn(instance=0, rng=None, **ds.BLOOD_TRANSFUSION.params)
    assert data.shape == (748, 5)
    assert (env.cache / "blood_transfusion" / "transfusion.data").is_file()
    assert len(env.requests) == 1
    assert cmdata.require(ds.BLOOD_TRANSFUSION) == env.cache / "blood_transfusion"
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
    assert "transfusion.data" in message
    assert decl.files[0].sha256 in message and sha(tampered) in message
    assert not (env.cache / decl.folder / "transfusion.data").exists()
    assert _leftovers(env.cache) == []
    with pytest.raises(cmdata.ChecksumError, match=sha(tampered)):
        cmdata.require(decl)  # the same message, not hidden behind "not found"


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
    assert rows["gone"] == {"name": "gone", "shape": (3, 2), "rank": 1, "present": False,
                            "where": [str(env.cache / "gone")], "error": None}
    assert rows["broken"]["present"] is False and sha(b"p") in rows["broken"]["error"]
    assert rows["synthetic-gaussian"]["present"] is None and rows["synthetic-gaussian"]["rank"] == 8
    assert env.requests == []  # status never downloads
