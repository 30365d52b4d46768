#version 450
// Oracle GEMM: C = alpha * A(MxK) * B(KxN) + beta * C, row-major f32, 16x16 shared-memory tiles.
// Deliberately plain: it checks the generated GEMM kernels, it does not compete with them.
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) buffer C { float c[]; };
layout(push_constant) uniform Push { uint M, N, K; float alpha, beta; } pc;
shared float As[16][16];
shared float Bs[16][16];
void main() {
  uint row = gl_WorkGroupID.y * 16 + gl_LocalInvocationID.y;
  uint col = gl_WorkGroupID.x * 16 + gl_LocalInvocationID.x;
  float acc = 0.0;
  for (uint k0 = 0; k0 < pc.K; k0 += 16) {
    uint ka = k0 + gl_LocalInvocationID.x, kb = k0 + gl_LocalInvocationID.y;
    As[gl_LocalInvocationID.y][gl_LocalInvocationID.x] = (row < pc.M && ka < pc.K) ? a[row * pc.K + ka] : 0.0;
    Bs[gl_LocalInvocationID.y][gl_LocalInvocationID.x] = (kb < pc.K && col < pc.N) ? b[kb * pc.N + col] : 0.0;
    barrier();
    for (uint k = 0; k < 16; ++k) acc += As[gl_LocalInvocationID.y][k] * Bs[k][gl_LocalInvocationID.x];
    barrier();
  }
  if (row < pc.M && col < pc.N) {
    uint i = row * pc.N + col;
    c[i] = pc.alpha * acc + (pc.beta != 0.0 ? pc.beta * c[i] : 0.0);
  }
}
