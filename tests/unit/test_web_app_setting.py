"""Where the web client's build comes from (`TOKENDANCE_WEB_DIR`), and what `serve`
says about it at start (adapters/http/routes/web_app.py)."""

from __future__ import annotations

from pathlib import Path

from adapters.config.settings import WEB_DIST, Settings
from adapters.http.routes.web_app import BUILD, where


def test_the_build_is_the_repositorys_web_dist_unless_the_setting_names_another(
    tmp_path: Path,
) -> None:
    assert Path(__file__).resolve().parents[2] / "web" / "dist" == WEB_DIST
    assert Settings.from_env({}).web_dir == WEB_DIST
    assert Settings.from_env({"TOKENDANCE_WEB_DIR": " "}).web_dir == WEB_DIST
    assert Settings.from_env({"TOKENDANCE_WEB_DIR": str(tmp_path)}).web_dir == tmp_path


def test_serve_names_the_web_apps_address_or_says_it_is_not_built(tmp_path: Path) -> None:
    said = where(tmp_path, "127.0.0.1", 8123)
    assert said.startswith("web app: not built")
    assert str(tmp_path) in said and BUILD in said
    (tmp_path / "index.html").write_text("<!doctype html>")
    assert where(tmp_path, "127.0.0.1", 8123) == "web app: http://127.0.0.1:8123/"
    assert where(tmp_path, "0.0.0.0", 80) == "web app: http://localhost:80/"
