from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from artifacts.errors import ChperfError
from runner.server import server_command
from runner.serverconfig import (
    Ports,
    ServerLayout,
    overlays_digest,
    validate_overlay,
    write_server_files,
)
from tests.conftest import REPO

OVERLAY = REPO / "overlays" / "max_block_size_8192"


def test_generated_config_listens_on_loopback_only_with_the_given_ports(tmp_path: Path) -> None:
    layout = ServerLayout(tmp_path / "srv")
    write_server_files(layout, Ports(tcp=9101, http=8101), ())
    root = ET.parse(layout.config_file).getroot()
    assert root.tag == "yandex"
    assert [e.text for e in root.findall("listen_host")] == ["127.0.0.1"]
    assert root.findtext("tcp_port") == "9101"
    assert root.findtext("http_port") == "8101"
    assert root.findtext("path") == f"{layout.data}/"
    assert root.find("query_log/flush_interval_milliseconds") is not None
    assert ET.parse(layout.users_file).getroot().findtext("profiles/default/log_queries") == "1"


def test_server_directories_are_private(tmp_path: Path) -> None:
    layout = ServerLayout(tmp_path / "srv")
    write_server_files(layout, Ports(tcp=1, http=2), ())
    for d in (layout.data, layout.tmp, layout.user_files, layout.logs):
        assert d.stat().st_mode & 0o077 == 0


def test_overlay_files_land_in_the_config_tree(tmp_path: Path) -> None:
    layout = ServerLayout(tmp_path / "srv")
    write_server_files(layout, Ports(tcp=1, http=2), (OVERLAY,))
    assert (layout.root / "users.d" / "max_block_size.xml").exists()
    assert not (layout.root / "config.d").exists()


def test_the_overlays_digest_follows_their_content_not_their_path(tmp_path: Path) -> None:
    elsewhere = tmp_path / "another checkout" / "max_block_size_8192"
    shutil.copytree(OVERLAY, elsewhere)
    assert overlays_digest(()) == ""
    assert len(overlays_digest((OVERLAY,))) == 64
    assert overlays_digest((elsewhere,)) == overlays_digest((OVERLAY,))
    setting = elsewhere / "users.d" / "max_block_size.xml"
    setting.write_text(setting.read_text().replace("8192", "4096"))
    assert overlays_digest((elsewhere,)) != overlays_digest((OVERLAY,))
    # a later overlay's file of the same name replaces the earlier one's, as on the server
    assert overlays_digest((OVERLAY, elsewhere)) == overlays_digest((elsewhere,))
    layout = ServerLayout(tmp_path / "srv")
    write_server_files(layout, Ports(tcp=1, http=2), (OVERLAY, elsewhere))
    assert "4096" in (layout.root / "users.d" / "max_block_size.xml").read_text()


def test_overlay_without_config_d_or_users_d_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ChperfError, match=r"neither config\.d/ nor users\.d/"):
        validate_overlay(tmp_path)


@pytest.mark.parametrize(
    ("binary", "head"),
    [
        ("/usr/sbin/clickhouse-server", ["/usr/sbin/clickhouse-server"]),
        ("/opt/ch/clickhouse", ["/opt/ch/clickhouse", "server"]),
    ],
)
def test_multi_call_binary_is_started_as_clickhouse_server(binary: str, head: list[str]) -> None:
    command = server_command(Path(binary), Path("/x/config.xml"))
    assert command == [*head, "--config-file=/x/config.xml"]
