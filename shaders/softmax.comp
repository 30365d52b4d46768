#version 450
// Oracle softmax along the last axis: one workgroup per row, max-subtracted for stability.
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows, cols; } pc;
shared float red[128];
void main() {
  uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  if (row >= pc.rows) return;
  uint base = row * pc.cols;
  float m = -3.402823466e38;
  for (uint j = t; j < pc.cols; j += 128) m = max(m, x[base + j]);
  red[t] = m;
  barrier();
  for (uint s = 64; s > 0; s >>= 1) { if (t < s) red[t] = max(red[t], red[t + s]); barrier(); }
  m = red[0];
  barrier();
  float sum = 0.0;
  for (uint j = t; j < pc.cols; j += 128) sum += exp(x[base + j] - m);
  red[t] = sum;
  barrier();
  for (uint s = 64; s > 0; s >>= 1) { if (t < s) red[t] += red[t + s]; barrier(); }
  float inv = 1.0 / red[0];
  for (uint j = t; j < pc.cols; j += 128) y[base + j] = exp(x[base + j] - m) * inv;
}
