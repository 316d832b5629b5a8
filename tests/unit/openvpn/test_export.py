from __future__ import annotations

import json
import os

from tests.schema import check_export
from zsn.exporter import document as export
from zsn.exporter.prometheus import render
from zsn.openvpn import export as ovpn_export
from zsn.openvpn.connections import config_path
from zsn.system.host import Host


def test_export_without_a_bus_reports_errors_and_no_secrets(root: Host) -> None:
    path = root.path(config_path("client", "office"))
    path.write_text("client\nremote vpn.example.net 1194 tcp\n<key>\nTOPSECRET\n</key>\n")
    os.chmod(path, 0o600)
    result = export.collect(root, ["openvpn"], include_secrets=True)
    text = export.to_json(result)
    assert "TOPSECRET" not in text
    check_export(json.loads(text))
    (conn,) = json.loads(text)["openvpn"]["connections"]
    assert conn["unit"] == "openvpn-client@office.service"
    assert conn["remotes"] == [{"host": "vpn.example.net", "port": "1194", "proto": "tcp"}]
    assert conn["unit_state"] is None and "socket not found" in conn["errors"][0]
    assert result.errors and result.errors[0].startswith("openvpn: openvpn-client@office")


def test_prometheus_from_collected_data() -> None:
    data = {"connections": [{
        "unit": "openvpn-client@office.service", "name": "office", "kind": "client",
        "unit_state": {"active": "active", "enabled": "enabled"},
        "live": {"state": "CONNECTED", "bytes_in": 2018, "bytes_out": 1884, "clients": None},
    }], "findings": [{"severity": "warning"}]}
    text = render(ovpn_export.prometheus(data))
    labels = 'unit="openvpn-client@office.service",name="office",kind="client"'
    assert f"zsn_openvpn_connected{{{labels}}} 1" in text
    assert f'zsn_openvpn_state{{{labels},state="CONNECTED"}} 1' in text
    assert f'zsn_openvpn_state{{{labels},state="WAIT"}} 0' in text
    assert f"zsn_openvpn_receive_bytes_total{{{labels}}} 2018" in text
    assert f'zsn_openvpn_unit_active{{{labels},state="active"}} 1' in text
    assert 'zsn_openvpn_findings{severity="warning"} 1' in text


def test_present_only_with_openvpn_folder(tmp_path: object, root: Host) -> None:
    assert ovpn_export.present(root)
    assert not ovpn_export.present(Host(root.path("/etc/openvpn/client")))
