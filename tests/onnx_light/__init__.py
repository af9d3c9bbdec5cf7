"""Tests of the onnx-light portable quantized values (hurray_decl.onnx_light)."""
