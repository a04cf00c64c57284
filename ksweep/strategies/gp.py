"""A small Gaussian process in numpy, for model-based search over a few hundred points.

Matérn-5/2 kernel with one length scale per feature (ARD), a signal and a noise variance.
The hyper-parameters maximise the log marginal likelihood plus weak log-normal priors (the
priors keep a handful of points from producing absurd length scales), by a few Adam steps
on analytic gradients, warm-started from the previous fit. Inputs are features scaled to
[0, 1]; outputs should be standardised by the caller.
"""

from __future__ import annotations

import numpy as np

SQRT5 = np.sqrt(5.0)
JITTER = 1e-8


def sq_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    return np.maximum(d, 0.0)


def matern52(r: np.ndarray) -> np.ndarray:
    return (1.0 + SQRT5 * r + (5.0 / 3.0) * r * r) * np.exp(-SQRT5 * r)


class GaussianProcess:
    # Prior means and widths of (log length scales..., log signal variance, log noise variance).
    LENGTH_PRIOR = (np.log(0.5), 1.5)
    SIGNAL_PRIOR = (0.0, 1.0)
    NOISE_PRIOR = (np.log(1e-2), 2.0)
    BOUNDS = (-7.0, 5.0)

    def __init__(self, dims: int):
        self.dims = dims
        self.theta = self._prior_mean()
        self._x: np.ndarray | None = None

    def _prior_mean(self) -> np.ndarray:
        return np.concatenate([np.full(self.dims, self.LENGTH_PRIOR[0]), [self.SIGNAL_PRIOR[0], self.NOISE_PRIOR[0]]])

    def _prior_sd(self) -> np.ndarray:
        return np.concatenate([np.full(self.dims, self.LENGTH_PRIOR[1]), [self.SIGNAL_PRIOR[1], self.NOISE_PRIOR[1]]])

    @property
    def length_scales(self) -> np.ndarray:
        return np.exp(self.theta[: self.dims])

    @property
    def signal(self) -> float:
        return float(np.exp(self.theta[self.dims]))

    @property
    def noise(self) -> float:
        return float(np.exp(self.theta[self.dims + 1]))

    def log_posterior(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Log marginal likelihood + log prior of ``theta``, and its gradient."""
        d = self.dims
        ls, sf2, sn2 = np.exp(theta[:d]), np.exp(theta[d]), np.exp(theta[d + 1])
        xs = x / ls
        r2 = sq_dist(xs, xs)
        r = np.sqrt(r2)
        e = np.exp(-SQRT5 * r)
        kf = sf2 * (1.0 + SQRT5 * r + (5.0 / 3.0) * r2) * e
        k = kf + (sn2 + JITTER) * np.eye(len(y))
        try:
            chol = np.linalg.cholesky(k)
        except np.linalg.LinAlgError:
            return -np.inf, np.zeros_like(theta)
        inv_l = np.linalg.inv(chol)
        k_inv = inv_l.T @ inv_l
        alpha = k_inv @ y
        value = -0.5 * y @ alpha - np.log(np.diag(chol)).sum()
        w = np.outer(alpha, alpha) - k_inv
        # dk/dlog(l_j) = sf2 * 5/3 * (1 + sqrt5 r) e^{-sqrt5 r} * (dx_j / l_j)^2
        wg = w * (sf2 * (5.0 / 3.0) * (1.0 + SQRT5 * r) * e)
        # 0.5 * sum_ab wg_ab (x_aj - x_bj)^2, expanded (wg is symmetric) so that no
        # n x n x d array is built.
        length_grad = (xs * xs).T @ wg.sum(axis=1) - np.einsum("aj,aj->j", xs, wg @ xs)
        grad = np.concatenate([length_grad, [0.5 * (w * kf).sum(), 0.5 * np.trace(w) * sn2]])
        mu, sd = self._prior_mean(), self._prior_sd()
        value += -0.5 * (((theta - mu) / sd) ** 2).sum()
        grad += -(theta - mu) / sd**2
        return float(value), grad

    def fit(self, x: np.ndarray, y: np.ndarray, steps: int = 20, lr: float = 0.1) -> None:
        """Adam ascent of the log posterior from the current hyper-parameters."""
        theta = self.theta.copy()
        m = np.zeros_like(theta)
        v = np.zeros_like(theta)
        best_value, best = -np.inf, theta.copy()
        for t in range(1, steps + 1):
            value, grad = self.log_posterior(theta, x, y)
            if not np.isfinite(value):
                break
            if value > best_value:
                best_value, best = value, theta.copy()
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            theta = np.clip(theta + lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8), *self.BOUNDS)
        self.theta = best

    def condition(self, x: np.ndarray, y: np.ndarray) -> None:
        """Fix the training data for ``predict``."""
        self._x = x / self.length_scales
        k = self.signal * matern52(np.sqrt(sq_dist(self._x, self._x))) + (self.noise + JITTER) * np.eye(len(y))
        try:
            inv_l = np.linalg.inv(np.linalg.cholesky(k))
        except np.linalg.LinAlgError:  # duplicate inputs with a tiny noise: add more jitter
            k += 1e-4 * np.eye(len(y))
            inv_l = np.linalg.inv(np.linalg.cholesky(k))
        self._k_inv = inv_l.T @ inv_l
        self._alpha = self._k_inv @ y

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation at ``x``."""
        ks = self.signal * matern52(np.sqrt(sq_dist(x / self.length_scales, self._x)))
        mean = ks @ self._alpha
        var = np.maximum(self.signal - ((ks @ self._k_inv) * ks).sum(1), 1e-12)
        return mean, np.sqrt(var)


def norm_cdf(z: np.ndarray) -> np.ndarray:
    """Standard normal CDF with small *relative* error in the tails (Numerical Recipes'
    erfc), which expected improvement needs far from the incumbent; numpy has no erf."""
    x = -z / np.sqrt(2.0)
    t = 1.0 / (1.0 + 0.5 * np.abs(x))
    poly = -x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return 0.5 * np.where(x >= 0, erfc, 2.0 - erfc)


def norm_pdf(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)


def expected_improvement(mean: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """Expected amount by which a candidate falls below ``best`` (we minimise)."""
    z = (best - mean) / sd
    return sd * (z * norm_cdf(z) + norm_pdf(z))
