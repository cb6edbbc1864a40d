"""Second, plain implementations of the channel formulas (scalar math, no numpy).

Written straight from the sources, independent of channel_models, so the
tests compare two implementations (Sionna style).
"""

import math

C = 299_792_458.0


def log_distance_loss_db(distance_2d_m, h=23.5, beta0=-30.0, kappa=3.75, d0=1.0):
    d = math.sqrt(distance_2d_m * distance_2d_m + h * h)
    return -(beta0 - 10 * kappa * math.log10(max(d, d0) / d0))


def free_space_loss_db(d3, f_hz):
    return 20 * math.log10(4 * math.pi * d3 * f_hz / C)


def uma_los_db(distance_2d_m, fc_hz, h_bs=25.0, h_ut=1.5):
    d3 = math.sqrt(distance_2d_m**2 + (h_bs - h_ut) ** 2)
    fc = fc_hz / 1e9
    d_bp = 4 * (h_bs - 1) * (h_ut - 1) * fc_hz / C
    if distance_2d_m <= d_bp:
        return 28.0 + 22 * math.log10(d3) + 20 * math.log10(fc)
    return (
        28.0
        + 40 * math.log10(d3)
        + 20 * math.log10(fc)
        - 9 * math.log10(d_bp**2 + (h_bs - h_ut) ** 2)
    )


def uma_nlos_db(distance_2d_m, fc_hz, h_bs=25.0, h_ut=1.5):
    d3 = math.sqrt(distance_2d_m**2 + (h_bs - h_ut) ** 2)
    pl = 13.54 + 39.08 * math.log10(d3) + 20 * math.log10(fc_hz / 1e9) - 0.6 * (h_ut - 1.5)
    return max(uma_los_db(distance_2d_m, fc_hz, h_bs, h_ut), pl)


def umi_los_db(distance_2d_m, fc_hz, h_bs=10.0, h_ut=1.5):
    d3 = math.sqrt(distance_2d_m**2 + (h_bs - h_ut) ** 2)
    fc = fc_hz / 1e9
    d_bp = 4 * (h_bs - 1) * (h_ut - 1) * fc_hz / C
    if distance_2d_m <= d_bp:
        return 32.4 + 21 * math.log10(d3) + 20 * math.log10(fc)
    return (
        32.4
        + 40 * math.log10(d3)
        + 20 * math.log10(fc)
        - 9.5 * math.log10(d_bp**2 + (h_bs - h_ut) ** 2)
    )


def umi_nlos_db(distance_2d_m, fc_hz, h_bs=10.0, h_ut=1.5):
    d3 = math.sqrt(distance_2d_m**2 + (h_bs - h_ut) ** 2)
    pl = 35.3 * math.log10(d3) + 22.4 + 21.3 * math.log10(fc_hz / 1e9) - 0.3 * (h_ut - 1.5)
    return max(umi_los_db(distance_2d_m, fc_hz, h_bs, h_ut), pl)


def uma_p_los(distance_2d_m):
    return (
        1.0
        if distance_2d_m <= 18
        else (18 / distance_2d_m + math.exp(-distance_2d_m / 63) * (1 - 18 / distance_2d_m))
    )


def umi_p_los(distance_2d_m):
    return (
        1.0
        if distance_2d_m <= 18
        else (18 / distance_2d_m + math.exp(-distance_2d_m / 36) * (1 - 18 / distance_2d_m))
    )


def rma_los_db(d2d, fc_hz, h_bs=35.0, h_ut=1.5, h=5.0):
    """TR 38.901 Table 7.4.1-1 RMa LOS, written out plainly."""
    fc = fc_hz / 1e9
    d_bp = 2 * math.pi * h_bs * h_ut * fc_hz / C

    def pl1(d3):
        return (
            20 * math.log10(40 * math.pi * d3 * fc / 3)
            + min(0.03 * h**1.72, 10) * math.log10(d3)
            - min(0.044 * h**1.72, 14.77)
            + 0.002 * math.log10(h) * d3
        )

    d3 = math.sqrt(d2d**2 + (h_bs - h_ut) ** 2)
    if d2d <= d_bp:
        return pl1(d3)
    d3_bp = math.sqrt(d_bp**2 + (h_bs - h_ut) ** 2)
    return pl1(d3_bp) + 40 * math.log10(d3 / d3_bp)


def rma_nlos_db(d2d, fc_hz, h_bs=35.0, h_ut=1.5, h=5.0, w=20.0):
    fc = fc_hz / 1e9
    d3 = math.sqrt(d2d**2 + (h_bs - h_ut) ** 2)
    pl = (
        161.04
        - 7.1 * math.log10(w)
        + 7.5 * math.log10(h)
        - (24.37 - 3.7 * (h / h_bs) ** 2) * math.log10(h_bs)
        + (43.42 - 3.1 * math.log10(h_bs)) * (math.log10(d3) - 3)
        + 20 * math.log10(fc)
        - (3.2 * (math.log10(11.75 * h_ut)) ** 2 - 4.97)
    )
    return max(rma_los_db(d2d, fc_hz, h_bs, h_ut, h), pl)
