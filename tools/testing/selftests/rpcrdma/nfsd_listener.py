#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""nfsd listeners over the nfsd generic netlink family (listener-get, listener-set).

What nfsdctl of nfs-utils 2.7+ does with "listener +rdma:ADDR:PORT", without needing it (the test
guests run the host's nfs-utils). /proc/fs/nfsd/portlist can only create wildcard listeners;
listener-set hands nfsd a full sockaddr, which reaches the transport's xpo_create as it is.

  nfsd_listener.py get                      one line per listener: TRANSPORT ADDRESS PORT
  nfsd_listener.py add TRANSPORT ADDR PORT  adds one listener, keeping the existing ones

Standard library only.
"""
import ipaddress
import os
import socket
import struct
import sys

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLA_F_NESTED = 0x8000
# include/uapi/linux/nfsd_netlink.h
NFSD_CMD_LISTENER_SET = 6
NFSD_CMD_LISTENER_GET = 7
NFSD_A_SERVER_SOCK_ADDR = 1
NFSD_A_SOCK_ADDR = 1
NFSD_A_SOCK_TRANSPORT_NAME = 2


def attr(kind, payload):
    head = struct.pack("=HH", 4 + len(payload), kind)
    return head + payload + b"\0" * (-len(payload) % 4)


def attrs(data):
    out = []
    while len(data) >= 4:
        length, kind = struct.unpack_from("=HH", data)
        if length < 4:
            break
        out.append((kind & ~NLA_F_NESTED, data[4:length]))
        data = data[(length + 3) & ~3:]
    return out


class Genl:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self.sock.bind((0, 0))
        self.seq = 0

    def request(self, family, cmd, payload=b"", version=1):
        """Sends one request; returns the attributes of each reply message."""
        self.seq += 1
        body = struct.pack("=BBH", cmd, version, 0) + payload
        msg = struct.pack("=IHHII", 16 + len(body), family, NLM_F_REQUEST | NLM_F_ACK,
                          self.seq, 0) + body
        self.sock.send(msg)
        replies = []
        while True:
            data = self.sock.recv(65536)
            while len(data) >= 16:
                length, kind, _, seq, _ = struct.unpack_from("=IHHII", data)
                chunk, data = data[16:length], data[(length + 3) & ~3:]
                if seq != self.seq:
                    continue
                if kind == NLMSG_ERROR:
                    err = struct.unpack_from("=i", chunk)[0]
                    if err:
                        raise OSError(-err, os.strerror(-err))
                    return replies
                if kind == NLMSG_DONE:
                    return replies
                replies.append(attrs(chunk[4:]))

    def family(self, name):
        reply = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                             attr(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"))
        for kind, value in reply[0]:
            if kind == CTRL_ATTR_FAMILY_ID:
                return struct.unpack("=H", value[:2])[0]
        raise OSError("no family " + name)


def sockaddr(addr, port):
    ip = ipaddress.ip_address(addr)
    if ip.version == 4:
        return struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + ip.packed + b"\0" * 8
    return (struct.pack("=H", socket.AF_INET6) + struct.pack("!HI", port, 0) + ip.packed +
            struct.pack("=I", 0))


def parse_sockaddr(raw):
    family = struct.unpack_from("=H", raw)[0]
    port = struct.unpack_from("!H", raw, 2)[0]
    if family == socket.AF_INET:
        return str(ipaddress.IPv4Address(raw[4:8])), port
    if family == socket.AF_INET6:
        return str(ipaddress.IPv6Address(raw[8:24])), port
    return "family-%d" % family, port


def listeners(nl, fam):
    """The listeners nfsd has: a list of (transport, raw sockaddr)."""
    out = []
    for reply in nl.request(fam, NFSD_CMD_LISTENER_GET):
        for kind, nest in reply:
            if kind != NFSD_A_SERVER_SOCK_ADDR:
                continue
            sock = dict(attrs(nest))
            out.append((sock[NFSD_A_SOCK_TRANSPORT_NAME].rstrip(b"\0").decode(),
                        sock[NFSD_A_SOCK_ADDR]))
    return out


def main(argv):
    nl = Genl()
    fam = nl.family("nfsd")
    if argv[1:2] == ["get"]:
        for transport, raw in listeners(nl, fam):
            addr, port = parse_sockaddr(raw)
            print(transport, addr, port)
        return 0
    if len(argv) == 5 and argv[1] == "add":
        want = listeners(nl, fam) + [(argv[2], sockaddr(argv[3], int(argv[4])))]
        payload = b"".join(
            attr(NFSD_A_SERVER_SOCK_ADDR | NLA_F_NESTED,
                 attr(NFSD_A_SOCK_ADDR, raw) +
                 attr(NFSD_A_SOCK_TRANSPORT_NAME, transport.encode() + b"\0"))
            for transport, raw in want)
        nl.request(fam, NFSD_CMD_LISTENER_SET, payload)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except OSError as e:
        print("nfsd_listener.py: %s" % e, file=sys.stderr)
        sys.exit(1)
