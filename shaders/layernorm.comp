#version 450
// Oracle LayerNorm along the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta; one workgroup per row.
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer G { float gamma[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bt { float beta[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows, cols; float eps; } pc;
shared float red[128];
float blockSum(float v, uint t) {
  red[t] = v;
  barrier();
  for (uint s = 64; s > 0; s >>= 1) { if (t < s) red[t] += red[t + s]; barrier(); }
  float r = red[0];
  barrier();
  return r;
}
void main() {
  uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  if (row >= pc.rows) return;
  uint base = row * pc.cols;
  float s = 0.0;
  for (uint j = t; j < pc.cols; j += 128) s += x[base + j];
  float mean = blockSum(s, t) / float(pc.cols);
  float v = 0.0;
  for (uint j = t; j < pc.cols; j += 128) { float d = x[base + j] - mean; v += d * d; }
  float rstd = inversesqrt(blockSum(v, t) / float(pc.cols) + pc.eps);
  for (uint j = t; j < pc.cols; j += 128) y[base + j] = (x[base + j] - mean) * rstd * gamma[j] + beta[j];
}
