"""SASL_SSL (SCRAM over TLS) with the properties Spark passes as kafka.*."""

import pytest

import kwire


def sasl_props(env, password=None, mechanism="SCRAM-SHA-256"):
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    return {
        "bootstrap.servers": "%s:%s" % (env["KWIRE_SECURE_HOST"], env["KWIRE_SECURE_SASL_SSL_PORT"]),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": '%s required username="%s" password="%s";'
        % (module, env["KWIRE_SECURE_USER"], password or env["KWIRE_SECURE_PASSWORD"]),
        "ssl.truststore.location": env["KWIRE_SECURE_CA"],
    }


def spark_options(props):
    return {"kafka." + k: v for k, v in props.items()}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_read_over_sasl_ssl(secure_env, new_topic, producer, mechanism):
    topic = new_topic()
    for i in range(5):
        producer.send(topic, value=b"s%d" % i, partition=0)
    producer.flush()
    opts = spark_options(sasl_props(secure_env, mechanism=mechanism))
    opts["subscribe"] = topic
    t = kwire.read(opts)
    assert t.column("value").to_pylist() == [b"s%d" % i for i in range(5)]


def test_consumer_over_sasl_ssl(secure_env, new_topic, producer):
    topic = new_topic()
    producer.send(topic, value=b"x", partition=0)
    producer.flush()
    props = sasl_props(secure_env)
    props["auto.offset.reset"] = "earliest"
    with kwire.Consumer(props) as c:
        assert c.end_offsets([(topic, 0)]) == {(topic, 0): 1}
        c.assign([(topic, 0)])
        rows = 0
        for _ in range(20):
            rows += c.poll(500).num_rows
            if rows:
                break
        assert rows == 1


def test_wrong_password_is_an_authentication_error(secure_env, new_topic):
    topic = new_topic()
    opts = spark_options(sasl_props(secure_env, password="wrong"))
    opts["subscribe"] = topic
    with pytest.raises(kwire.AuthenticationError) as e:
        kwire.read(opts)
    assert "wrong" not in str(e.value)  # never carries secrets
