"""The ROM model: the cartridge's own frame logic over its 128 RAM bytes (`kernel`), its screen drawn from that
RAM (`render`), and its parameters (`params`: only what the kernel reads)."""
