// YaRN RoPE in adjacent pairs (kernels.h rope_yarn), the rotation ggml's rope_yarn() computes: pair
// i's angle blends the interpolated (pos * freq_scale * theta_i) and extrapolated (pos * theta_i)
// angles by a ramp over the pair index between the two correction dimensions, and cos/sin carry a
// magnitude.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/kernels.h"

namespace duet::kernels {
namespace {

// The pair index at which a RoPE frequency turns `rotations` times over orig_ctx positions.
float yarn_corr_dim(int64_t n_rot, int64_t orig_ctx, float rotations, float base) {
    return float(n_rot) * std::log(float(orig_ctx) / (rotations * 2.0f * float(M_PI))) / (2.0f * std::log(base));
}

}  // namespace

YarnRope yarn_rope(int64_t n_rot, float freq_base, float factor, int64_t orig_ctx, float beta_fast, float beta_slow,
                   float magnitude) {
    if (n_rot < 2 || n_rot % 2 != 0 || !(factor >= 1.0f) || orig_ctx < 1 || !(freq_base > 0.0f))
        fail("yarn_rope: bad parameters (n_rot {}, factor {}, orig_ctx {}, freq_base {})", n_rot, factor, orig_ctx,
             freq_base);
    YarnRope y;
    y.freq_base = freq_base;
    y.freq_scale = 1.0f / factor;
    y.corr_low = std::max(0.0f, std::floor(yarn_corr_dim(n_rot, orig_ctx, beta_fast, freq_base)));
    y.corr_high = std::min(float(n_rot - 1), std::ceil(yarn_corr_dim(n_rot, orig_ctx, beta_slow, freq_base)));
    y.magnitude = magnitude;
    return y;
}

void rope_yarn(float* x, int64_t n_head, int64_t head_stride, int64_t n_rot, int64_t pos, const YarnRope& y) {
    for (int64_t i = 0; i < n_rot / 2; ++i) {
        const float extrap = float(pos) * std::pow(y.freq_base, -2.0f * float(i) / float(n_rot));
        const float interp = y.freq_scale * extrap;
        const float ramp = 1.0f - std::clamp((float(i) - y.corr_low) / std::max(0.001f, y.corr_high - y.corr_low),
                                             0.0f, 1.0f);
        const float theta = interp * (1.0f - ramp) + extrap * ramp;
        const float c = std::cos(theta) * y.magnitude, s = std::sin(theta) * y.magnitude;
        for (int64_t h = 0; h < n_head; ++h) {
            float* p = x + h * head_stride + 2 * i;
            const float a = p[0], b = p[1];
            p[0] = a * c - b * s;
            p[1] = a * s + b * c;
        }
    }
}

}  // namespace duet::kernels
