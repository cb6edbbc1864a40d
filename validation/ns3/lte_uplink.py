"""ns-3 LTE uplink reference: each UE's duration to upload one UDP burst (issue 22).

    python -m venv /tmp/ns3 && /tmp/ns3/bin/pip install ns3==3.44.post0
    /tmp/ns3/bin/python validation/ns3/lte_uplink.py [--quick] [--out FILE]

Not a runtime dependency of netfl: this script runs ns-3's LTE module (LENA, with the
EPC) through the ``ns3`` pip package's Python bindings and writes what it measured to a
small JSON fixture (default ``tests/reference/ns3_lte_uplink.json``) that netfl's tests
compare against. The simulation itself is C++ compiled by cppyy at start-up (the
bindings' own way to pass traces into Python is slow and fragile).

The cell (every value recorded in the fixture): one eNB, FDD, 20 MHz (100 RBs) on
both links at EARFCN 100/18100 (2.12 GHz DL, 1.93 GHz UL); log-distance path loss
``30 + 37.5·log10(d3D)`` dB (reference loss 30 dB at 1 m, exponent 3.75) with the
eNB ``bs_height_m`` above the UEs; no fading, no shadowing; UE 23 dBm and eNB 46 dBm,
noise figures 9 and 5 dB; ns-3's default uplink power control (open loop, P0 −80
dBm, α = 1, closed-loop TPC at 0 dB); MI-based TB error model with HARQ (at most 3
retransmissions, 8 ms apart); RLC UM with a buffer large enough for the burst; the
RR or PF MAC scheduler. The uplink MCS comes from the SRS SINR of the worst RB of the
grant, mapped with ns-3's gap-based rule (BER target 5·10⁻⁵) to a CQI and an MCS
(TS 36.213 tables); a UE whose SINR maps to CQI 0 is not scheduled (starved).

Every UE's UdpClient sends ``payload_bytes`` as datagrams of ``datagram_bytes`` at
``start_s`` (all UEs at the same instant; 1 µs between datagrams, i.e. a burst); a
UE's upload duration is the arrival time of its last datagram at the remote host
(an ideal 100 Gb/s link with no delay behind the PGW) minus ``start_s``. A UE that
received nothing by ``stop_s`` is recorded as starved (``duration_s: null``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

CPP = r"""
#include <chrono>
namespace netfl_ref {
using namespace ns3;
static std::vector<double> g_last;
static std::vector<double> g_bytes;
static void Rx(uint32_t i, Ptr<const Packet> p, const Address&) {
    g_last[i] = Simulator::Now().GetSeconds();
    g_bytes[i] += p->GetSize();
}
// returns [run_wall_s, last_rx_s..., bytes...]
std::vector<double> Run(std::vector<double> xs, std::vector<double> ys, double bsHeight,
                        std::string scheduler, uint32_t payload, uint32_t datagram,
                        double start, double stop, uint32_t run, std::string traceDir,
                        bool downlink) {
    const uint32_t n = xs.size();
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(run);
    Config::SetDefault("ns3::LteEnbNetDevice::UlBandwidth", UintegerValue(100));
    Config::SetDefault("ns3::LteEnbNetDevice::DlBandwidth", UintegerValue(100));
    Config::SetDefault("ns3::LteUePhy::TxPower", DoubleValue(23.0));
    Config::SetDefault("ns3::LteEnbPhy::TxPower", DoubleValue(46.0));
    Config::SetDefault("ns3::LteUePhy::NoiseFigure", DoubleValue(9.0));
    Config::SetDefault("ns3::LteEnbPhy::NoiseFigure", DoubleValue(5.0));
    Config::SetDefault("ns3::LteRlcUm::MaxTxBufferSize", UintegerValue(64 * 1024 * 1024));
    Config::SetDefault("ns3::LteEnbRrc::SrsPeriodicity", UintegerValue(n > 20 ? 80 : 40));
    if (downlink) {  // the remote host's burst to n UEs must not overflow the core's
        // 100-packet device queues (a drop-tail loss there is not the radio's)
        Config::SetDefault("ns3::DropTailQueue<Packet>::MaxSize", QueueSizeValue(QueueSize("1000000p")));
    }
    if (!traceDir.empty()) {  // (before the helper: it creates the calculators)
        Config::SetDefault("ns3::MacStatsCalculator::UlOutputFilename", StringValue(traceDir + "/UlMacStats.txt"));
        Config::SetDefault("ns3::PhyRxStatsCalculator::UlRxOutputFilename", StringValue(traceDir + "/UlRxPhyStats.txt"));
        Config::SetDefault("ns3::MacStatsCalculator::DlOutputFilename", StringValue(traceDir + "/DlMacStats.txt"));
        Config::SetDefault("ns3::PhyRxStatsCalculator::DlRxOutputFilename", StringValue(traceDir + "/DlRxPhyStats.txt"));
    }
    Ptr<LteHelper> lte = CreateObject<LteHelper>();
    Ptr<PointToPointEpcHelper> epc = CreateObject<PointToPointEpcHelper>();
    lte->SetEpcHelper(epc);
    lte->SetAttribute("PathlossModel", StringValue("ns3::LogDistancePropagationLossModel"));
    lte->SetPathlossModelAttribute("ReferenceDistance", DoubleValue(1.0));
    lte->SetPathlossModelAttribute("ReferenceLoss", DoubleValue(30.0));
    lte->SetPathlossModelAttribute("Exponent", DoubleValue(3.75));
    lte->SetSchedulerType(scheduler);
    Ptr<Node> pgw = epc->GetPgwNode();
    NodeContainer remote; remote.Create(1);
    InternetStackHelper internet; internet.Install(remote);
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate("100Gb/s")));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(1500));
    p2p.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
    NetDeviceContainer inet = p2p.Install(pgw, remote.Get(0));
    Ipv4AddressHelper ipv4h; ipv4h.SetBase("1.0.0.0", "255.0.0.0");
    Ipv4InterfaceContainer ifs = ipv4h.Assign(inet);
    Ipv4Address remoteAddr = ifs.GetAddress(1);
    Ipv4StaticRoutingHelper rh;
    rh.GetStaticRouting(remote.Get(0)->GetObject<Ipv4>())
        ->AddNetworkRouteTo(Ipv4Address("7.0.0.0"), Ipv4Mask("255.0.0.0"), 1);
    NodeContainer enbs; enbs.Create(1);
    NodeContainer ues; ues.Create(n);
    Ptr<ListPositionAllocator> enbPos = CreateObject<ListPositionAllocator>();
    enbPos->Add(Vector(0, 0, bsHeight));
    Ptr<ListPositionAllocator> uePos = CreateObject<ListPositionAllocator>();
    for (uint32_t i = 0; i < n; i++) uePos->Add(Vector(xs[i], ys[i], 0));
    MobilityHelper mob; mob.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mob.SetPositionAllocator(enbPos); mob.Install(enbs);
    mob.SetPositionAllocator(uePos); mob.Install(ues);
    NetDeviceContainer enbDevs = lte->InstallEnbDevice(enbs);
    NetDeviceContainer ueDevs = lte->InstallUeDevice(ues);
    internet.Install(ues);
    Ipv4InterfaceContainer ueIfs = epc->AssignUeIpv4Address(ueDevs);
    for (uint32_t i = 0; i < n; i++) {
        rh.GetStaticRouting(ues.Get(i)->GetObject<Ipv4>())
            ->SetDefaultRoute(epc->GetUeDefaultGatewayAddress(), 1);
    }
    lte->Attach(ueDevs, enbDevs.Get(0));
    g_last.assign(n, -1.0); g_bytes.assign(n, 0.0);
    uint32_t packets = (payload + datagram - 1) / datagram;
    for (uint32_t i = 0; i < n; i++) {  // uplink: UE -> remote host; downlink: the reverse
        uint16_t port = 2000 + i;
        Ptr<Node> receiver = downlink ? ues.Get(i) : remote.Get(0);
        Ptr<Node> sender = downlink ? remote.Get(0) : ues.Get(i);
        PacketSinkHelper sink("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sink.Install(receiver);
        s.Start(Seconds(0.1));
        s.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&Rx, i));
        UdpClientHelper client(downlink ? ueIfs.GetAddress(i) : remoteAddr, port);
        client.SetAttribute("Interval", TimeValue(MicroSeconds(1)));
        client.SetAttribute("MaxPackets", UintegerValue(packets));
        client.SetAttribute("PacketSize", UintegerValue(datagram));
        ApplicationContainer c = client.Install(sender);
        c.Start(Seconds(start));
    }
    if (!traceDir.empty()) {
        if (downlink) {
            lte->EnableDlMacTraces();
            lte->EnableDlRxPhyTraces();
        } else {
            lte->EnableUlMacTraces();
            lte->EnableUlRxPhyTraces();
        }
    }
    Simulator::Stop(Seconds(stop));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Simulator::Destroy();
    std::vector<double> out; out.push_back(wall);
    for (uint32_t i = 0; i < n; i++) out.push_back(g_last[i]);
    for (uint32_t i = 0; i < n; i++) out.push_back(g_bytes[i]);
    return out;
}
}
"""

BS_HEIGHT_M = 23.5
START_S = 1.0


def geometries(quick: bool) -> dict[str, list[float]]:
    """Named sets of UE ground distances [m] from the eNB, 30–300 m."""
    singles = {f"single-{d}m": [float(d)] for d in (30, 100, 200, 300)}
    lines = {f"line-{n}": [30.0 + 270.0 * i / (n - 1) for i in range(n)] for n in (5, 10, 20)}
    # the same lines ending at 260 m, where every UE is in range: ns-3's round robin
    # splits the RBs among the UEs with data, starved ones included (their share is
    # lost), so these show the rest of the model without that effect
    served = {f"line-{n}-260m": [30.0 + 230.0 * i / (n - 1) for i in range(n)] for n in (5, 10, 20)}
    if quick:
        return {"single-100m": [100.0], "line-5": lines["line-5"]}
    return {**singles, **lines, **served}


def positions(distances: list[float]) -> list[tuple[float, float]]:
    """UEs on a spiral of angles (golden angle), so no two share a bearing."""
    golden = math.pi * (3 - math.sqrt(5))
    return [(d * math.cos(i * golden), d * math.sin(i * golden)) for i, d in enumerate(distances)]


def parse_traces(trace_dir: Path, n: int, downlink: bool = False) -> dict[int, dict]:
    """Per UE (IMSI − 1): TTIs granted, mean MCS and TB size of new grants, HARQ retx
    (``Ul``/``Dl`` MAC and PHY reception traces; the downlink's have a transmission-mode
    column before the layer, so its NDI and correctness sit one column later)."""
    stats: dict[int, dict] = {
        i: {"grants": 0, "mcs": [], "tb_bytes": [], "tb_errors": 0, "retx": 0} for i in range(n)
    }
    prefix, shift = ("Dl", 1) if downlink else ("Ul", 0)
    mac = trace_dir / f"{prefix}MacStats.txt"
    if mac.exists():
        for line in mac.read_text().splitlines()[1:]:
            f = line.split()
            if len(f) < 8:
                continue
            ue = int(f[2]) - 1
            if ue in stats:
                stats[ue]["grants"] += 1
                stats[ue]["mcs"].append(int(f[6]))
                stats[ue]["tb_bytes"].append(int(f[7]))
    phy = trace_dir / f"{prefix}RxPhyStats.txt"
    if phy.exists():
        for line in phy.read_text().splitlines()[1:]:
            f = line.split()
            if len(f) < 10 + shift:
                continue
            ue = int(f[2]) - 1
            if ue in stats:
                stats[ue]["tb_errors"] += int(f[9 + shift]) == 0
                stats[ue]["retx"] += int(f[8 + shift]) == 0  # ndi 0: a retransmission
    out = {}
    for i, s in stats.items():
        out[i] = {
            "grants": s["grants"],
            "mean_mcs": sum(s["mcs"]) / len(s["mcs"]) if s["mcs"] else None,
            "mode_mcs": max(set(s["mcs"]), key=s["mcs"].count) if s["mcs"] else None,
            "mean_tb_bytes": sum(s["tb_bytes"]) / len(s["tb_bytes"]) if s["tb_bytes"] else None,
            "tb_errors": s["tb_errors"],
            "harq_retx": s["retx"],
        }
    return out


#: the eNB's schedulers
SCHEDULERS = {"rr": "ns3::RrFfMacScheduler", "pf": "ns3::PfFfMacScheduler"}
#: (payload, datagram): the 796,840-byte model in two datagram sizes, a smaller payload
OPTIONS = [(796_840, 1000), (796_840, 1400), (100_000, 1000)]


def load_ns3():
    """Import the bindings (~15 s), compile :data:`CPP`; the run function and the import time."""
    t_import = time.perf_counter()
    import cppyy
    from ns import ns  # noqa: F401  (the bindings load every module: ~15 s)

    cppyy.cppdef(CPP)
    return cppyy.gbl.netfl_ref.Run, time.perf_counter() - t_import


def measure(
    run_fn, geos: dict[str, list[float]], options: list, stop_s: float, downlink: bool
) -> list[dict]:
    """Every geometry × scheduler × (payload, datagram): each UE's duration, bytes and
    MAC/PHY statistics, printed as they come."""
    runs = []
    for geo, dists in geos.items():
        xy = positions(dists)
        for sched_name, sched in SCHEDULERS.items():
            for payload, datagram in options:
                with tempfile.TemporaryDirectory() as tmp:
                    t0 = time.perf_counter()
                    out = list(
                        run_fn(
                            [p[0] for p in xy],
                            [p[1] for p in xy],
                            BS_HEIGHT_M,
                            sched,
                            payload,
                            datagram,
                            START_S,
                            stop_s,
                            1,
                            tmp,
                            downlink,
                        )
                    )
                    call_s = time.perf_counter() - t0
                    per_ue = parse_traces(Path(tmp), len(dists), downlink)
                n = len(dists)
                wall, last, got = out[0], out[1 : 1 + n], out[1 + n :]
                packets = -(-payload // datagram)
                ues = []
                for i, (x, y) in enumerate(xy):
                    complete = got[i] >= packets * datagram
                    ues.append(
                        {
                            "x_m": round(x, 6),
                            "y_m": round(y, 6),
                            "distance_m": dists[i],
                            "duration_s": (last[i] - START_S) if got[i] > 0 else None,
                            "received_bytes": int(got[i]),
                            "complete": bool(complete),
                            **per_ue[i],
                        }
                    )
                runs.append(
                    {
                        "geometry": geo,
                        "scheduler": sched_name,
                        "payload_bytes": payload,
                        "datagram_bytes": datagram,
                        "ues": ues,
                        "simulator_run_wall_s": wall,
                        "call_wall_s": call_s,
                    }
                )
                done = [u["duration_s"] for u in ues]
                print(
                    f"{geo:<12} {sched_name} {payload:>7} B /{datagram:>5} B: "
                    f"run {wall:6.1f} s  durations {[None if d is None else round(d, 3) for d in done]}",
                    flush=True,
                )
    return runs


def cell_record(stop_s: float) -> dict:
    """The cell every run used, as the fixture records it."""
    return {
        "bandwidth_rbs": 100,
        "earfcn_dl": 100,
        "earfcn_ul": 18100,
        "pathloss": {
            "model": "log_distance",
            "reference_loss_db": 30.0,
            "reference_distance_m": 1.0,
            "exponent": 3.75,
        },
        "bs_height_m": BS_HEIGHT_M,
        "ue_height_m": 0.0,
        "ue_tx_power_dbm": 23.0,
        "bs_tx_power_dbm": 46.0,
        "ue_noise_figure_db": 9.0,
        "bs_noise_figure_db": 5.0,
        "fading": None,
        "uplink_power_control": {
            "model": "open_loop",
            "p0_dbm": -80,
            "alpha": 1.0,
            "closed_loop_tpc_db": 0,
        },
        "harq_max_retx": 3,
        "rlc": "UM",
        "start_s": START_S,
        "stop_s": stop_s,
    }


def write_fixture(path: Path, generator: str, import_s: float, runs: list, stop_s: float) -> None:
    """The fixture, written atomically."""
    fixture = {
        "generator": generator,
        "ns3_version": "3.44 (pip ns3==3.44.post0)",
        "import_wall_s": import_s,
        "cell": cell_record(stop_s),
        "runs": runs,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(fixture, indent=1) + "\n")
    os.replace(tmp, path)
    print(f"wrote {path} ({len(runs)} runs; bindings import {import_s:.1f} s)")


def cli(direction: str, geometries_of, stop_s: float) -> int:
    """The command line of a fixture script: ``--out``, ``--quick``, ``--stop-s``; runs
    every geometry × scheduler × option in ``direction`` and writes the fixture."""
    ap = argparse.ArgumentParser(description=f"ns-3 LTE {direction} reference")
    ap.add_argument("--out", default=f"tests/reference/ns3_lte_{direction}.json")
    ap.add_argument("--quick", action="store_true", help="two geometries, one of each option")
    ap.add_argument("--stop-s", type=float, default=stop_s, help="simulated time limit [s]")
    args = ap.parse_args()
    run_fn, import_s = load_ns3()
    options = OPTIONS[:1] if args.quick else OPTIONS
    downlink = direction == "downlink"
    runs = measure(run_fn, geometries_of(args.quick), options, args.stop_s, downlink)
    script = f"validation/ns3/lte_{direction}.py"
    write_fixture(Path(args.out), script, import_s, runs, args.stop_s)
    return 0


def main() -> int:
    return cli("uplink", geometries, 40.0)


if __name__ == "__main__":
    raise SystemExit(main())
