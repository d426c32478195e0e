"""cuswap.torch.additive_attention against the usual formulation, with a real torch (label python).

Same scores and gradients (1e-5), and the batch x Tq x Tv x dim intermediate
not kept for the backward pass: the bytes autograd saves for backward
(torch.autograd.graph.saved_tensors_hooks) are the inputs', not the
intermediate's. On the CPU: no GPU is needed for either.
"""

import unittest

import support

PRELUDE = """
    import torch
    import cuswap.torch

    torch.manual_seed(0)
    B, TQ, TV, H = 4, 64, 64, 128

    def plain(q, k, scale):
        return (scale * torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))).sum(-1)

    def saved_mib(fn, *inputs):
        saved = []
        def pack(t):
            saved.append(t.numel() * t.element_size())
            return t
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            fn(*inputs)
        return sum(saved) / 2**20

    def leaves(*shapes):
        return [torch.randn(*s, requires_grad=True) for s in shapes]

    def gradients(fn, inputs, weights):
        (fn(*inputs) * weights).sum().backward()
        grads = [x.grad.clone() for x in inputs]
        for x in inputs:
            x.grad = None
        return grads

    def max_difference(a, b):
        return max(float((x - y).abs().max()) for x, y in zip(a, b))
"""


class AdditiveAttention(unittest.TestCase):
    def test_scores_and_gradients_equal_the_plain_formulation(self):
        got = support.run_json([PRELUDE, """
            q, k, scale = leaves((B, TQ, H), (B, TV, H), (H,))
            w = torch.randn(B, TQ, TV)
            ours, theirs = cuswap.torch.additive_attention(q, k, scale), plain(q, k, scale)
            g_ours = gradients(cuswap.torch.additive_attention, [q, k, scale], w)
            g_theirs = gradients(plain, [q, k, scale], w)
            q1 = torch.randn(B, H)
            one = cuswap.torch.additive_attention(q1, k.detach())
            one_plain = plain(q1.unsqueeze(1), k.detach(), torch.ones(H))[:, 0]
            # torch's own check, in double precision
            qd, kd, sd = (torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True),
                          torch.randn(2, 4, 5, dtype=torch.float64, requires_grad=True),
                          torch.randn(5, dtype=torch.float64, requires_grad=True))
            report({"shape": list(ours.shape), "scores": max_difference([ours], [theirs]),
                    "gradients": max_difference(g_ours, g_theirs),
                    "gradient_scale": float(g_theirs[0].abs().max()),
                    "one_step_shape": list(one.shape),
                    "one_step": max_difference([one], [one_plain]),
                    "gradcheck": torch.autograd.gradcheck(
                        cuswap.torch.additive_attention, (qd, kd, sd))})
        """], support.clean_env())
        self.assertEqual(got["shape"], [4, 64, 64])
        self.assertEqual(got["one_step_shape"], [4, 64])
        self.assertLess(got["scores"], 1e-5)
        self.assertLess(got["one_step"], 1e-5)
        self.assertGreater(got["gradient_scale"], 1.0)
        self.assertLess(got["gradients"], 1e-5 * max(1.0, got["gradient_scale"]))
        self.assertTrue(got["gradcheck"])

    def test_the_intermediate_is_not_kept_for_the_backward_pass(self):
        got = support.run_json([PRELUDE, """
            q, k, scale = leaves((B, TQ, H), (B, TV, H), (H,))
            report({"plain": saved_mib(plain, q, k, scale),
                    "ours": saved_mib(cuswap.torch.additive_attention, q, k, scale)})
        """], support.clean_env())
        # B x TQ x TV x H floats: 8 MiB. Ours saves q, k and scale: 256 KiB.
        self.assertGreaterEqual(got["plain"], 8.0, got)
        self.assertLess(got["ours"], 0.5, got)


if __name__ == "__main__":
    unittest.main()
