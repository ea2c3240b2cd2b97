"""Framework adapters: a model plus inputs in, model outputs and a trace out.

``RNNModel(model, ...)`` picks the adapter for the model's framework: Keras 3 on any
backend and tf_keras (:mod:`.keras`), PyTorch (:mod:`.torch`), ONNX graphs run by ONNX
Runtime (:mod:`.onnx`). ``load_model`` opens Keras and ONNX files and ``load_torch_model``
PyTorch state_dict files without running code from them (:mod:`.loading`).
"""
