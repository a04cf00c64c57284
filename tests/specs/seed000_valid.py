"""Seed 000's is_valid, as its authors wrote it (lower-case arguments)."""

TK, TM = 128, 128


def is_valid(tn, n_stages, num_epi_warps, staging_row_pad):
    staging_pad = staging_row_pad
    threads = 32 * (2 + num_epi_warps)
    if threads > 1024:
        return False, "threads > 1024"
    if num_epi_warps < 4:
        return False, f"NUM_EPI_WARPS={num_epi_warps} < 4: row_group 3 never written"
    stage_bytes = TK * TM + TK * (tn // 2)
    off_tmem = n_stages * stage_bytes
    off_tma_mbar = off_tmem + 8
    off_mma_mbar = off_tma_mbar + n_stages * 8
    off_mainloop_mbar = off_mma_mbar + n_stages * 8
    off_epilogue_mbar = off_mainloop_mbar + 16
    off_staging = (off_epilogue_mbar + 16 + 127) & ~127
    staging_row_bytes = tn * 2 + staging_pad
    staging_warp_bytes = 32 * staging_row_bytes
    smem_total = (off_staging + num_epi_warps * staging_warp_bytes + 127) & ~127
    if smem_total > 233472:
        return False, f"SMEM {smem_total} > 228KB"
    if tn * 2 > 512:
        return False, f"TMEM {tn * 2} > 512"
    if 768 % tn != 0:
        return False, "N_DIM % TN != 0"
    if tn // 32 not in (4, 8):
        return False, f"COLS_PER_THREAD={tn // 32} invalid"
    if num_epi_warps > 4 and (tn // 2) // 32 not in (4, 8):
        return False, f"split COLS_PER_THREAD={(tn // 2) // 32} invalid"
    return True, "ok"


def split_only(config):
    """A config-taking constraint: only the split rule, to count it separately."""
    return config["NUM_EPI_WARPS"] <= 4 or (config["TN"] // 2) // 32 in (4, 8)
