"""`data fetch` against a real HTTP server on 127.0.0.1 serving an archive built on the fly."""

import functools
import http.server
import socket
import threading

import pytest

from facedetect.data import check_archive, fetch_cbcl, load_cbcl
from facedetect.errors import FacedetectError

from .conftest import pgm_bytes, write_official_archive


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
