"""reftorch.hub: local hubconf entry points, the cache layout and trusted list, offline downloads."""
import os

import pytest

import reftorch as torch
import reftorch.hub as hub

HUBCONF = '''
dependencies = ["numpy"]
import reftorch as torch

def tiny(n=2, *, bias=True):
    """A Linear(n, 1)."""
    return torch.nn.Linear(n, 1, bias=bias)

def _helper():
    pass

CONSTANT = 3
'''


@pytest.fixture
def repo(tmp_path, monkeypatch):
    d = tmp_path / "repo"
    d.mkdir()
    (d / "hubconf.py").write_text(HUBCONF)
    monkeypatch.setattr(hub, "_hub_dir", str(tmp_path / "hub"))
    return d


def test_local_load(repo):
    m = hub.load(str(repo), "tiny", 3, source="local", bias=False)
    assert isinstance(m, torch.nn.Linear) and m.weight.shape == (1, 3) and m.bias is None
    with pytest.raises(RuntimeError, match="Cannot find callable nothing in hubconf"):
        hub.load(str(repo), "nothing", source="local")
    with pytest.raises(RuntimeError, match="Cannot find callable CONSTANT in hubconf"):
        hub.load(str(repo), "CONSTANT", source="local")
    with pytest.raises(ValueError, match="Invalid input: model should be a string of function name"):
        hub.load(str(repo), 3, source="local")
    with pytest.raises(ValueError, match='Unknown source: "svn". Allowed values: "github" | "local".'):
        hub.load(str(repo), "tiny", source="svn")


def test_missing_dependencies(repo):
    (repo / "hubconf.py").write_text(HUBCONF.replace('["numpy"]', '["numpy", "no_such_pkg_x", "nor_this_y"]'))
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_pkg_x, nor_this_y"):
        hub.load(str(repo), "tiny", source="local")


def test_github_from_cache_and_offline_errors(repo, capsys):
    with pytest.raises(RuntimeError, match="no internet connection and the repo could not be found in the cache"):
        hub.load("someone/thing", "tiny")
    with pytest.raises(RuntimeError, match="network downloads are not available"):
        hub.load("pytorch/vision:v0.1", "tiny")
    cached = os.path.join(hub.get_dir(), "pytorch_tiny_main")
    os.rename(repo, cached)
    assert hub.list("pytorch/tiny") == ["tiny"]
    assert hub.help("pytorch/tiny", "tiny") == "A Linear(n, 1)."
    assert isinstance(hub.load("pytorch/tiny", "tiny", verbose=True), torch.nn.Linear)
    assert "Using cache found in" in capsys.readouterr().err
    assert open(os.path.join(hub.get_dir(), "trusted_list")).read() == ""    # pytorch/* is trusted as is
    with pytest.raises(RuntimeError, match="network downloads are not available"):
        hub.load("pytorch/tiny", "tiny", force_reload=True)


def test_trust_check(repo, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    with pytest.raises(Exception, match="Untrusted repository."):
        hub.load("someone/thing:dev", "tiny")
    monkeypatch.setattr("builtins.input", lambda prompt: "maybe")
    with pytest.raises(ValueError, match="Unrecognized response maybe."):
        hub.load("someone/thing:dev", "tiny")
    with pytest.raises(RuntimeError, match="network downloads are not available"):
        hub.load("someone/thing:dev", "tiny", trust_repo=True)
    assert open(os.path.join(hub.get_dir(), "trusted_list")).read() == "someone_thing\n"


def test_get_set_dir(monkeypatch, tmp_path):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert hub.get_dir() == str(tmp_path / "th" / "hub")
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
    hub.set_dir("~/somewhere")
    assert hub.get_dir() == os.path.expanduser("~/somewhere")


def test_state_dict_from_url(repo, tmp_path, capsys):
    sd = {"w": torch.arange(4.0)}
    src = tmp_path / "weights-abc123.pt"
    torch.save(sd, str(src))
    with pytest.raises(RuntimeError, match="network downloads are not available"):
        hub.load_state_dict_from_url("https://example.com/weights-abc123.pt")
    got = hub.load_state_dict_from_url(src.as_uri())          # file:// is read locally
    assert got["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert "Downloading:" in capsys.readouterr().out
    got = hub.load_state_dict_from_url("https://example.com/weights-abc123.pt")   # now in the cache
    assert got["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub.load_state_dict_from_url(src.as_uri(), model_dir=str(tmp_path / "other"), check_hash=True)
    dst = tmp_path / "copy.pt"
    hub.download_url_to_file("https://example.com/weights-abc123.pt", str(dst))
    assert dst.read_bytes() == src.read_bytes()
    assert torch.hub is hub
