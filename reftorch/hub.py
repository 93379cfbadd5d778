"""reftorch.hub: entry points of a hubconf.py, and the hub cache, without a network.

`load(dir, model, source='local')` imports dir/hubconf.py, checks its `dependencies` list and calls
the entry point, as torch's. A github repo is used when torch's cache already holds it
(<hub dir>/<owner>_<repo>_<ref>, the layout torch itself writes); anything that would download raises a
RuntimeError that says so. download_url_to_file and load_state_dict_from_url read file:// URLs and
files already in the hub cache; http(s) downloads raise.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import warnings
import zipfile
from pathlib import Path
from urllib.parse import urlparse

from .serialization import load as _load

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
_hub_dir = None


def _no_network(what):
    return RuntimeError(f"reftorch.hub cannot download {what}: network downloads are not available. Put the file "
                        f"in the hub cache ({get_dir()}) first, or use a local directory with source='local'.")


@contextlib.contextmanager
def _add_to_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise AssertionError(f"failed to load spec from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _get_torch_home():
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME,
                                        os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")))


def get_dir():
    """The hub cache: set_dir's, else $TORCH_HOME/hub ($TORCH_HOME defaults to $XDG_CACHE_HOME/torch)."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def _parse_repo_info(github):
    """owner, name and ref of 'owner/name[:ref]'; without a ref, the cached main or master."""
    repo_info, ref = github.split(":") if ":" in github else (github, None)
    owner, name = repo_info.split("/")
    if ref is None:
        ref = next((r for r in ("main", "master") if os.path.exists(f"{get_dir()}/{owner}_{name}_{r}")), None)
        if ref is None:
            raise RuntimeError("It looks like there is no internet connection and the "
                               f"repo could not be found in the cache ({get_dir()})")
    return owner, name, ref


def _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo):
    hub_dir = get_dir()
    filepath = os.path.join(hub_dir, "trusted_list")
    Path(filepath).touch()
    with open(filepath) as file:
        trusted = tuple(line.strip() for line in file)
    owner_name = f"{owner}_{name}"
    is_trusted = owner_name in trusted or owner_name_branch in next(os.walk(hub_dir))[1] \
        or owner in _TRUSTED_REPO_OWNERS
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(f"The repository {owner_name} does not belong to the list of trusted repositories and as "
                         "such cannot be downloaded. Do you trust this repository and wish to add it to the trusted "
                         "list of repositories (y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")  # noqa: TRY002  (torch's class)
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(filepath, "a") as file:
            file.write(owner_name + "\n")


def _get_cache_or_reload(github, force_reload, trust_repo, verbose=True, skip_validation=False):
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _parse_repo_info(github)
    owner_name_branch = "_".join([owner, name, ref.replace("/", "_")])
    repo_dir = os.path.join(hub_dir, owner_name_branch)
    _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo)
    if force_reload or not os.path.exists(repo_dir):
        raise _no_network(f"the repository {owner}/{name} (ref {ref})")
    if verbose:
        sys.stderr.write(f"Using cache found in {repo_dir}\n")
    return repo_dir


def _hubconf(repo_dir):
    with _add_to_sys_path(repo_dir):
        return _import_module(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))


def _load_attr_from_module(module, func_name):
    return getattr(module, func_name) if func_name in dir(module) else None


def _check_dependencies(m):
    dependencies = _load_attr_from_module(m, VAR_DEPENDENCY)
    if dependencies is not None:
        missing = [pkg for pkg in dependencies if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")


def _load_entry_from_hubconf(m, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    _check_dependencies(m)
    func = _load_attr_from_module(m, model)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _repo_dir(repo_or_dir, source, force_reload, trust_repo, verbose, skip_validation):
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        return _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, verbose, skip_validation)
    return repo_or_dir


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """The entry points of a repo's hubconf.py: its public callables."""
    module = _hubconf(_get_cache_or_reload(github, force_reload, trust_repo, verbose, skip_validation))
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """The docstring of entry point `model`."""
    module = _hubconf(_get_cache_or_reload(github, force_reload, trust_repo, True, skip_validation))
    return _load_entry_from_hubconf(module, model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """Call entry point `model` of repo_or_dir's hubconf.py with *args, **kwargs."""
    repo_dir = _repo_dir(repo_or_dir, source, force_reload, trust_repo, verbose, skip_validation)
    with _add_to_sys_path(repo_dir):
        module = _import_module(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))
        return _load_entry_from_hubconf(module, model)(*args, **kwargs)


def _local_source(url):
    """The local file a URL names: a file:// path, else the same file name in the hub cache."""
    parts = urlparse(url)
    if parts.scheme == "file":
        from urllib.request import url2pathname     # urllib.request (http, ssl, email) only when asked
        return url2pathname(parts.path)
    for folder in (get_dir(), os.path.join(get_dir(), "checkpoints")):
        candidate = os.path.join(folder, os.path.basename(parts.path))
        if os.path.isfile(candidate):
            return candidate
    raise _no_network(url)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Copy what `url` names to dst (through a temporary file), checking the SHA-256 prefix when given."""
    src = _local_source(url)
    dst = os.path.expanduser(dst)
    tmp = f"{dst}.partial"
    digest = hashlib.sha256()
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            for block in iter(lambda: fin.read(1 << 20), b""):
                fout.write(block)
                digest.update(block)
        if hash_prefix is not None and not digest.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest.hexdigest()}")')
        shutil.move(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _is_legacy_zip_format(filename):
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            infolist = zf.infolist()
        return len(infolist) == 1 and not infolist[0].is_dir()
    return False


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """reftorch.load of <model_dir>/<file name>, fetched (file:// or the hub cache) when not there yet."""
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match.group(1) if match else None, progress=progress)
    if _is_legacy_zip_format(cached_file):
        with zipfile.ZipFile(cached_file) as zf:
            member = zf.infolist()[0].filename
            if os.path.isabs(member) or ".." in Path(member).parts:       # no writing outside model_dir
                raise ValueError(f"Archive entry has absolute path: {member}")
            zf.extractall(model_dir)
        cached_file = os.path.join(model_dir, member)
    return _load(cached_file, map_location=map_location, weights_only=weights_only)

