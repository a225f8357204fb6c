"""CPU emulator of the CUDA kernels (see ``docs/gpu.md``); use ``emu.emulated()``."""
