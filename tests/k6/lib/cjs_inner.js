exports.message = "inner ok";
