"""`data fetch` against a real HTTP server on 127.0.0.1 serving an archive built on the fly,
and against file:// URLs to archives built in tmp_path (no network)."""

import functools
import hashlib
import http.server
import socket
import threading
from pathlib import Path

import pytest

from facedetect.data import check_archive, fetch_cbcl, load_cbcl
from facedetect.data import _fetch as fetch_module
from facedetect.errors import FacedetectError

from .conftest import pgm_bytes, random_windows, write_official_archive


@pytest.fixture(scope="module")
def official_archive(tmp_path_factory, cbcl_dir):
    """faces.tar.gz in the official nested layout, from the shared training set."""
    root = tmp_path_factory.mktemp("served")
    data = load_cbcl(cbcl_dir)
    split = {"train": {"face": [pgm_bytes(w) for w in data.images[data.labels == 1]],
                       "non-face": [pgm_bytes(w) for w in data.images[data.labels == 0]]}}
    write_official_archive(root / "faces.tar.gz", split)
    write_official_archive(root / "small.tar.gz", {"train": {
        "face": split["train"]["face"][:5], "non-face": split["train"]["non-face"][:5]}})
    (root / "notatar.tar.gz").write_bytes(b"<html>moved</html>")
    return root


@pytest.fixture(scope="module")
def server(official_archive):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                directory=str(official_archive))
    handler.log_message = lambda *args: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_fetch_downloads_checks_and_renames(server, tmp_path):
    target = fetch_cbcl(f"{server}/faces.tar.gz", tmp_path, progress=False)
    assert target == tmp_path / "faces.tar.gz"
    assert check_archive(target) == {"train": {"face": 2429, "non-face": 4548}}
    assert [p.name for p in tmp_path.iterdir()] == ["faces.tar.gz"]
    assert load_cbcl(tmp_path).labels.sum() == 2429


def test_fetch_rejects_wrong_counts_and_leaves_nothing(server, tmp_path):
    with pytest.raises(FacedetectError, match="official archive has 2429"):
        fetch_cbcl(f"{server}/small.tar.gz", tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_fetch_rejects_non_archive(server, tmp_path):
    with pytest.raises(FacedetectError, match="not a tar archive"):
        fetch_cbcl(f"{server}/notatar.tar.gz", tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_fetch_without_network_says_so(tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(FacedetectError, match="no network or server unreachable"):
        fetch_cbcl(f"http://127.0.0.1:{port}/faces.tar.gz", tmp_path, progress=False, timeout=5)
    assert list(tmp_path.iterdir()) == []


# --- file:// sources, pinned SHA-256, bounded downloads, clean failures (no network) ------

SMALL_COUNTS = {"train": {"face": 2, "non-face": 3}, "test": {"face": 1, "non-face": 1}}


@pytest.fixture
def small_official(tmp_path, monkeypatch) -> Path:
    """An archive in the official layout whose counts are, for this test, the official ones."""
    from facedetect.data import _cbcl as cbcl
    monkeypatch.setattr(cbcl, "OFFICIAL_COUNTS", SMALL_COUNTS)   # fetch reads it on use
    windows = random_windows(5, seed=3)
    (tmp_path / "src").mkdir()
    return write_official_archive(tmp_path / "src" / "faces.tar.gz", {"train": {
        "face": [pgm_bytes(w) for w in windows[:2]],
        "non-face": [pgm_bytes(w) for w in windows[2:]]}})


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_default_url_is_https():
    assert fetch_module.DEFAULT_URL.startswith("https://cbcl.mit.edu/")


def test_fetch_from_a_file_url_with_a_pinned_sha256(small_official, tmp_path):
    dest = tmp_path / "out" / "cbcl"
    target = fetch_cbcl(small_official.as_uri(), dest, sha256=_sha256(small_official).upper(),
                        progress=False)
    assert target == dest / "faces.tar.gz" and [p.name for p in dest.iterdir()] == [
        "faces.tar.gz"]
    assert _sha256(target) == _sha256(small_official)


def test_sha256_mismatch_is_refused_and_leaves_nothing(small_official, tmp_path):
    with pytest.raises(FacedetectError, match=r"SHA-256 of the download is [0-9a-f]{64}, "
                                              r"expected 0{64}"):
        fetch_cbcl(small_official.as_uri(), tmp_path / "out" / "a" / "b", sha256="0" * 64,
                   progress=False)
    assert not (tmp_path / "out").exists()


def test_known_sha256_of_a_url_is_checked(small_official, tmp_path, monkeypatch):
    url = small_official.as_uri()
    monkeypatch.setattr(fetch_module, "KNOWN_SHA256", {url: "f" * 64})
    with pytest.raises(FacedetectError, match="expected f{64}"):
        fetch_cbcl(url, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
    assert fetch_module.expected_sha256(url) == "f" * 64
    assert fetch_module.expected_sha256(url, "A" * 64) == "a" * 64  # given beats known


def test_failed_fetch_removes_only_the_folders_it_created(tmp_path):
    windows = random_windows(4)
    wrong = write_official_archive(tmp_path / "wrong.tar.gz", {"train": {
        "face": [pgm_bytes(windows[0])], "non-face": [pgm_bytes(w) for w in windows[1:]]}})
    with pytest.raises(FacedetectError, match="official archive has 2429"):
        fetch_cbcl(wrong.as_uri(), tmp_path / "out" / "a" / "b", progress=False)
    assert not (tmp_path / "out").exists()
    kept = tmp_path / "existing"
    kept.mkdir()
    with pytest.raises(FacedetectError, match="official archive has 2429"):
        fetch_cbcl(wrong.as_uri(), kept / "new", progress=False)
    assert kept.is_dir() and list(kept.iterdir()) == []


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1/faces.tar.gz",
                                 "data:application/octet-stream;base64,AAAA",
                                 "faces.tar.gz"])
def test_only_https_http_and_file_urls_are_accepted(tmp_path, url):
    with pytest.raises(FacedetectError, match="unsupported URL scheme"):
        fetch_cbcl(url, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


class _FakeResponse:
    """A response that never ends, optionally announcing a length."""

    def __init__(self, length=None):
        self.headers = {"Content-Length": str(length)} if length else {}
        self.served = 0

    def read(self, size):
        self.served += size
        if self.served > (4 << 20):
            raise AssertionError("read far past the limit")
        return bytes(size)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("length", [None, 10**10])
def test_download_size_is_bounded_while_streaming(tmp_path, monkeypatch, length):
    response = _FakeResponse(length)
    monkeypatch.setattr(fetch_module, "MAX_DOWNLOAD_BYTES", 300_000)
    monkeypatch.setattr(fetch_module, "_open", lambda url, timeout: response)
    with pytest.raises(FacedetectError, match="larger than the limit of 300,000 bytes"):
        fetch_cbcl("https://example.invalid/faces.tar.gz", tmp_path / "out", progress=False)
    # Refused on the announced length before any read, else within one block of the limit.
    if length:
        assert response.served == 0
    else:
        assert 300_000 < response.served <= 300_000 + (1 << 16)
    assert not (tmp_path / "out").exists()


def test_destination_that_cannot_be_created_is_a_clean_error(small_official, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(FacedetectError, match="cannot create folder"):
        fetch_cbcl(small_official.as_uri(), blocker / "sub", progress=False)
    if Path("/proc/self").is_dir():  # read-only even for root
        with pytest.raises(FacedetectError, match="cannot create folder /proc/x"):
            fetch_cbcl(small_official.as_uri(), "/proc/x", progress=False)


def _cli(argv, capsys):
    from facedetect.cli._main import main
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip().splitlines()


def test_cli_fetch_notes_the_missing_sha256_and_names_the_verb(small_official, tmp_path,
                                                               capsys):
    url = small_official.as_uri()
    code, out, err = _cli(["data", "fetch", "--url", url, "--dest", str(tmp_path / "a"),
                           "--quiet"], capsys)
    assert code == 0 and "saved and checked" in out
    assert len(err) == 1 and err[0].startswith("facedetect data fetch: note: no SHA-256 is "
                                               "published for this archive")
    code, out, err = _cli(["data", "fetch", "--url", url, "--dest", str(tmp_path / "b"),
                           "--sha256", _sha256(small_official), "--quiet"], capsys)
    assert code == 0 and err == []
    code, out, err = _cli(["data", "fetch", "--url", url, "--dest", str(tmp_path / "c"),
                           "--sha256", "1" * 64, "--quiet"], capsys)
    assert code == 1 and len(err) == 1
    assert err[0].startswith("facedetect data fetch: error: ") and "SHA-256" in err[0]
    assert not (tmp_path / "c").exists()


def test_cli_fetch_errors_are_one_line_named_after_the_verb(small_official, capsys):
    code, _, err = _cli(["data", "fetch", "--url", "ftp://127.0.0.1:1/x.tar.gz"], capsys)
    assert code == 1 and len(err) == 1
    assert err[0].startswith("facedetect data fetch: error: ") and "scheme" in err[0]
    if Path("/proc/self").is_dir():
        code, _, err = _cli(["data", "fetch", "--url", small_official.as_uri(), "--dest",
                             "/proc/x", "--quiet"], capsys)
        assert code == 1 and "Traceback" not in "\n".join(err)
        assert err[-1].startswith("facedetect data fetch: error: cannot create folder /proc/x")


def test_cli_fetch_sha256_option_and_help(capsys):
    from facedetect.cli._main import main
    with pytest.raises(SystemExit) as raised:
        main(["data", "fetch", "--sha256", "xyz"])
    assert raised.value.code == 2 and "64 hexadecimal digits" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["data", "fetch", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "file://" in text and "offline" in text and "--sha256" in text
